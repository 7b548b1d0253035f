// The host reference of tools/device/persist_proto.cu (plain C++, no CUDA): the prototype's simplified dual layer
// (LayerNorm without affine -> qkv -> q/k RMSNorm -> attention over a cached prefix + the new key -> o-proj + residual
// -> LayerNorm -> SwiGLU MLP + residual), every GEMV input rounded to bf16 as on the device, computed in T (double: the
// reference; float: a second host result whose distance from the double one is the noise floor of the check, the
// bf16 roundings of slightly different fp32 values).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace persist_ref {

constexpr int R = 2, D = 1536, H = 12, HD = 128, F = 6144, QKVN = 3 * D;
constexpr int LAYER_ROWS = QKVN + D + 3 * F;  // qkv, o, gate, up, down^T rows of D per layer
constexpr int OFF_O = QKVN, OFF_G = QKVN + D, OFF_U = OFF_G + F, OFF_DT = OFF_U + F;

#ifdef __CUDACC__
#define PERSIST_HD __host__ __device__
#else
#define PERSIST_HD
#endif

// The prototype's random data, the same on the device (persist_proto.cu's fill kernel) and the host
// (persist_proto_noise.cpp): value i of a fill, a hash of i and the seed, uniform in [-scale, scale] before its bf16
// rounding; the weights' seeds and scales (unit-variance outputs for unit-variance inputs); the keys' and values' seeds
// (scale sqrt(3): unit variance, like normalised keys); the first layer's input.
PERSIST_HD inline float fill_value(size_t i, unsigned seed, float scale) {
  unsigned h = (unsigned)i * 0x9E3779B1u ^ (unsigned)(i >> 32) * 0x85EBCA77u ^ seed;
  h ^= h >> 15, h *= 0x2C1B3C6Du, h ^= h >> 12, h *= 0x297A2D39u, h ^= h >> 15;
  return ((float)(h >> 8) * (1.f / 16777216.f) * 2.f - 1.f) * scale;
}
inline unsigned weight_seed(int layer, bool down) { return (down ? 2000u : 1000u) + (unsigned)layer; }
inline float weight_scale(bool down) { return std::sqrt(3.f / (down ? F : D)); }
constexpr unsigned KEY_SEED = 7, VALUE_SEED = 8;
inline float kv_scale() { return std::sqrt(3.f); }
inline float x0_value(int i) { return std::sin(0.37f * i) + 0.1f * (i % 7); }

inline float bf2f(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float round_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
template <class T>
void layer_norm(const T* x, T* y) {
  T m = 0, v = 0;
  for (int i = 0; i < D; ++i) m += x[i];
  m /= D;
  for (int i = 0; i < D; ++i) v += (x[i] - m) * (x[i] - m);
  const T r = T(1) / std::sqrt(v / D + T(1e-5));
  for (int i = 0; i < D; ++i) y[i] = (x[i] - m) * r;
}

// w: [L][LAYER_ROWS][D] bf16 bits; kc, vc: [L][R][H][PMAX][HD]; x0: [R][D]. Returns the last layer's output [R][D].
template <class T>
std::vector<double> reference(const std::vector<uint16_t>& w, const std::vector<uint16_t>& kc,
                              const std::vector<uint16_t>& vc, const std::vector<float>& x0, int L, int P, int PMAX) {
  std::vector<T> x(x0.begin(), x0.end()), xn(R * D), qkv(R * QKVN), att(R * D), x1(R * D), g(R * F), u(R * F),
      hh(R * F), inb(R * D), s(P + 1);
  std::vector<float> wf(D);
  auto gemv = [&](size_t row0, int nrows, const T* in, T* out, int ostride) {
    for (int i = 0; i < R * D; ++i) inb[i] = round_bf16((float)in[i]);  // the Linear input in bf16
    for (int o = 0; o < nrows; ++o) {
      const uint16_t* wr = &w[(row0 + o) * D];
      for (int i = 0; i < D; ++i) wf[i] = bf2f(wr[i]);
      for (int r = 0; r < R; ++r) {
        T acc = 0;
        for (int i = 0; i < D; ++i) acc += (T)wf[i] * inb[r * D + i];
        out[r * ostride + o] = acc;
      }
    }
  };
  for (int l = 0; l < L; ++l) {
    const size_t base = (size_t)l * LAYER_ROWS;
    for (int r = 0; r < R; ++r) layer_norm(&x[r * D], &xn[r * D]);
    gemv(base, QKVN, xn.data(), qkv.data(), QKVN);
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < H; ++h) {
        T q[HD], k[HD], v[HD], nq = 0, nk = 0;
        for (int d = 0; d < HD; ++d) {
          q[d] = qkv[r * QKVN + h * HD + d], k[d] = qkv[r * QKVN + D + h * HD + d];
          v[d] = qkv[r * QKVN + 2 * D + h * HD + d];
          nq += q[d] * q[d], nk += k[d] * k[d];
        }
        const T sq = T(1) / std::sqrt(nq / HD + T(1e-6)) / std::sqrt(T(HD)), sk = T(1) / std::sqrt(nk / HD + T(1e-6));
        for (int d = 0; d < HD; ++d) q[d] *= sq, k[d] *= sk;
        const size_t cb = (((size_t)l * R + r) * H + h) * PMAX * HD;
        T m = -1e30f;
        for (int j = 0; j <= P; ++j) {
          T t = 0;
          for (int d = 0; d < HD; ++d) t += q[d] * (j < P ? (T)bf2f(kc[cb + (size_t)j * HD + d]) : k[d]);
          s[j] = t;
          m = std::max(m, t);
        }
        T den = 0;
        for (int j = 0; j <= P; ++j) den += (s[j] = std::exp(s[j] - m));
        for (int d = 0; d < HD; ++d) {
          T o = 0;
          for (int j = 0; j <= P; ++j) o += s[j] * (j < P ? (T)bf2f(vc[cb + (size_t)j * HD + d]) : v[d]);
          att[r * D + h * HD + d] = o / den;
        }
      }
    gemv(base + OFF_O, D, att.data(), x1.data(), D);
    for (int i = 0; i < R * D; ++i) x1[i] += x[i];
    for (int r = 0; r < R; ++r) layer_norm(&x1[r * D], &xn[r * D]);
    gemv(base + OFF_G, F, xn.data(), g.data(), F);
    gemv(base + OFF_U, F, xn.data(), u.data(), F);
    for (int i = 0; i < R * F; ++i) hh[i] = g[i] / (T(1) + std::exp(-g[i])) * u[i];
    x = x1;
    for (int j = 0; j < F; ++j) {
      const uint16_t* wr = &w[(base + OFF_DT + j) * D];
      for (int r = 0; r < R; ++r)
        for (int d = 0; d < D; ++d) x[r * D + d] += hh[r * F + j] * (T)bf2f(wr[d]);
    }
  }
  return std::vector<double>(x.begin(), x.end());
}

// Relative L2 distance of a from b.
inline double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double se = 0, sr = 0;
  for (size_t i = 0; i < a.size(); ++i) se += (a[i] - b[i]) * (a[i] - b[i]), sr += b[i] * b[i];
  return std::sqrt(se / sr);
}

}  // namespace persist_ref
