// Owns the prefill's row sharing rule (host-only, plain C++; tests/inference/test_prefill_rows.cpp): when every
// prompt's rows repeat the first prompt's bit for bit (the editor's variations of one prompt), the CUDA engine runs the
// cond stream for the first prompt's rows only and copies their KV slots to the others.
#pragma once

#include <cstddef>
#include <cstring>

namespace cubeforge::cuda::detail {

// The rows of prefill()'s input `cond` ([rows][row_floats], with CFG rows [0,P) conditional and [P,2P) unconditional)
// the cond stream must compute: 2 with CFG (1 without) where all P prompts equal the first bitwise, else all rows.
// Bitwise, not by value: equal bits give equal KV slots, which is what lets the copies stand in for the computation.
inline int prefill_rows_to_compute(const float* cond, int rows, bool cfg, size_t row_floats) {
  const int P = cfg ? rows / 2 : rows;
  if (P <= 1) return rows;
  const size_t bytes = row_floats * sizeof(float);
  auto same = [&](int r, int first) {
    return std::memcmp(cond + r * row_floats, cond + first * row_floats, bytes) == 0;
  };
  for (int p = 1; p < P; ++p)
    if (!same(p, 0) || (cfg && !same(P + p, P))) return rows;
  return cfg ? 2 : 1;
}

}  // namespace cubeforge::cuda::detail
