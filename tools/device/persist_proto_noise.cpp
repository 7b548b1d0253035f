// The noise floor of persist_proto's check, on the CPU: its host reference in double against the same in float, on
// weights filled by the prototype's fill_value (persist_proto_ref.h: the same values as on the device), for L layers.
// Build and run (repo root): g++ -std=c++20 -O3 -march=native -o /tmp/pp_noise tools/device/persist_proto_noise.cpp
//   && /tmp/pp_noise 4 23
#include <cstdio>
#include <cstdlib>

#include "persist_proto_ref.h"

using namespace persist_ref;

static uint16_t fill_bits(size_t i, unsigned seed, float scale) {  // persist_proto.cu's fill_bf16, on the host
  const float f = round_bf16(fill_value(i, seed, scale));
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
      for (size_t i = 0; i < (size_t)OFF_DT * D; ++i) w[base + i] = fill_bits(i, weight_seed(l, false), weight_scale(false));
      for (size_t i = 0; i < (size_t)F * D; ++i)
        w[base + (size_t)OFF_DT * D + i] = fill_bits(i, weight_seed(l, true), weight_scale(true));
    }
    for (size_t i = 0; i < kc.size(); ++i)
      kc[i] = fill_bits(i, KEY_SEED, kv_scale()), vc[i] = fill_bits(i, VALUE_SEED, kv_scale());
    std::vector<float> x0(R * D);
    for (int i = 0; i < R * D; ++i) x0[i] = x0_value(i);
    const auto d = reference<double>(w, kc, vc, x0, L, P, PMAX), f = reference<float>(w, kc, vc, x0, L, P, PMAX);
    std::printf("%d layers: relative L2 of the float reference from the double one %.3e\n", L, rel_l2(f, d));
  }
  return 0;
}
