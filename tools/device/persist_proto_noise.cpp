// The noise floor of persist_proto's check, on the CPU: its host reference in double against the same in float, on
// weights filled by the same hash as the prototype's fill_bf16 (so the same values as on the device), for L layers.
// Build and run (repo root): g++ -std=c++20 -O3 -march=native -o /tmp/pp_noise tools/device/persist_proto_noise.cpp
//   && /tmp/pp_noise 4 23
#include <cstdio>
#include <cstdlib>

#include "persist_proto_ref.h"

using namespace persist_ref;

static uint16_t fill_value(size_t i, unsigned seed, float scale) {  // fill_bf16 of persist_proto.cu, on the host
  unsigned h = (unsigned)i * 0x9E3779B1u ^ (unsigned)(i >> 32) * 0x85EBCA77u ^ seed;
  h ^= h >> 15, h *= 0x2C1B3C6Du, h ^= h >> 12, h *= 0x297A2D39u, h ^= h >> 15;
  const float f = round_bf16(((float)(h >> 8) * (1.f / 16777216.f) * 2.f - 1.f) * scale);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

int main(int argc, char** argv) {
  const int P = 334, PMAX = 512;
  for (int a = 1; a < argc; ++a) {
    const int L = std::atoi(argv[a]);
    std::vector<uint16_t> w((size_t)L * LAYER_ROWS * D), kc((size_t)L * R * H * PMAX * HD), vc(kc.size());
    for (int l = 0; l < L; ++l) {
      const size_t base = (size_t)l * LAYER_ROWS * D;
      for (size_t i = 0; i < (size_t)OFF_DT * D; ++i) w[base + i] = fill_value(i, 1000 + l, std::sqrt(3.f / D));
      for (size_t i = 0; i < (size_t)F * D; ++i) w[base + (size_t)OFF_DT * D + i] = fill_value(i, 2000 + l, std::sqrt(3.f / F));
    }
    for (size_t i = 0; i < kc.size(); ++i) kc[i] = fill_value(i, 7, std::sqrt(3.f)), vc[i] = fill_value(i, 8, std::sqrt(3.f));
    std::vector<float> x0(R * D);
    for (int i = 0; i < R * D; ++i) x0[i] = std::sin(0.37f * i) + 0.1f * (i % 7);
    const auto d = reference<double>(w, kc, vc, x0, L, P, PMAX), f = reference<float>(w, kc, vc, x0, L, P, PMAX);
    std::printf("%d layers: relative L2 of the float reference from the double one %.3e\n", L, rel_l2(f, d));
  }
  return 0;
}
