// Small statistics helpers shared by the CLI commands that report timings.
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

}  // namespace cubeforge::cli
