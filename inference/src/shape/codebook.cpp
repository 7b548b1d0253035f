// Normalized VQ codebook (see codebook.h).
#include "shape/codebook.h"

#include <cmath>

namespace cubeforge {

std::vector<float> normalized_codebook(const float* cb, const float* w, const float* b, const float* nw, int K, int E) {
  std::vector<float> C(size_t(K) * E);
  for (int k = 0; k < K; ++k) {
    float* row = C.data() + size_t(k) * E;
    double ss = 0;
    for (int e = 0; e < E; ++e) {
      row[e] = cb[size_t(k) * E + e] * w[e] + b[e];
      ss += double(row[e]) * row[e];
    }
    const float r = 1.0f / std::sqrt(static_cast<float>(ss / E) + 1e-5f);
    for (int e = 0; e < E; ++e) row[e] = row[e] * r * nw[e];
  }
  return C;
}

std::vector<float> normalized_codebook(const SafeTensors& f, const ShapeConfig& cfg) {
  const int64_t K = cfg.num_codes, E = cfg.embed_dim;
  auto cb = f.to_f32("bottleneck.block.codebook.weight", {K, E});
  auto w = f.to_f32("bottleneck.block.cb_weight", {E});
  auto b = f.to_f32("bottleneck.block.cb_bias", {E});
  auto nw = f.to_f32("bottleneck.block.norm.weight", {E});
  return normalized_codebook(cb.data(), w.data(), b.data(), nw.data(), int(K), int(E));
}

}  // namespace cubeforge
