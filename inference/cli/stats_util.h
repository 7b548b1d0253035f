// Small statistics helpers shared by the CLI commands that report timings, and the digest they print.
#pragma once
#include <algorithm>
#include <vector>

namespace cubeforge::cli {

// Nearest-rank percentile (p in [0, 1]) of v; 0 for an empty list.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

// Median (mean of the two middle values for an even count); 0 for an empty list.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// FNV-1a over the bytes of a vector: cuda-check prints it for the engine's logits and tokens, generate for the tokens,
// so two builds or two runs (e.g. a batch of variations and single generations) compare bitwise from their output.
template <typename T>
unsigned long long fnv1a(const std::vector<T>& v) {
  unsigned long long h = 1469598103934665603ull;
  const unsigned char* b = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace cubeforge::cli
