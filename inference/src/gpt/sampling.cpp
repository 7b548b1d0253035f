// Guidance and token sampling (see sampling.h).
#include "gpt/sampling.h"
#include "gpt/top_p_key.h"

#include <algorithm>
#include <cmath>

namespace cubeforge {

void guide_logits(const float* cond, const float* uncond, int K, double g, int i, int N, float* out) {
  if (!uncond || g <= 0) {
    std::copy(cond, cond + K, out);
    return;
  }
  const double gamma_d = g * double(N - i) / double(N);  // Python double, used as an fp32 scalar
  const float gamma = static_cast<float>(gamma_d);
  const float one_plus = static_cast<float>(1.0 + gamma_d);
  for (int k = 0; k < K; ++k) {
    const float a = one_plus * cond[k];
    const float b = gamma * uncond[k];
    out[k] = a - b;
  }
}

int argmax(const float* x, int n) {
  int best = 0;
  for (int k = 1; k < n; ++k)
    if (x[k] > x[best]) best = k;
  return best;
}

int sample_top_p(const float* logits, int n, float top_p, uint64_t seed, int step, std::vector<std::pair<float, int>>& sc) {
  sc.resize(n);
  for (int k = 0; k < n; ++k) sc[k] = {logits[k], k};
  std::sort(sc.begin(), sc.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  const float mx = sc[0].first;
  double total = 0;
  for (auto& e : sc) {
    e.first = std::exp(e.first - mx);
    total += e.first;
  }
  double cum = 0;
  int keep = 0;
  for (int k = 0; k < n; ++k) {
    cum += sc[k].first / total;
    if (k > 0 && cum > double(top_p)) break;
    keep = k + 1;
  }
  double kept_sum = 0;
  for (int k = 0; k < keep; ++k) kept_sum += sc[k].first;
  const uint64_t r = topp::draw_bits(seed, step);
  const double u = double(r >> 11) * (1.0 / 9007199254740992.0) * kept_sum;
  double acc = 0;
  for (int k = 0; k < keep; ++k) {
    acc += sc[k].first;
    if (u < acc) return sc[k].second;
  }
  return sc[keep - 1].second;
}

}  // namespace cubeforge
