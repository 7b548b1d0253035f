// Tests the CUDA prefill's row sharing rule (inference/src/cuda/prefill_rows.h): which rows of a prefill input the
// cond stream computes, the rest being copies of the first prompt's KV slots.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda/prefill_rows.h"

namespace {

using cubeforge::cuda::detail::prefill_rows_to_compute;

constexpr size_t kRow = 6;  // floats per row (cond_len x width in the engine)

// P prompts with CFG: rows [0,P) conditional, [P,2P) unconditional; prompt p's cond row is filled with cond[p].
std::vector<float> rows_of(const std::vector<float>& cond, const std::vector<float>& uncond) {
  std::vector<float> out;
  for (float v : cond) out.insert(out.end(), kRow, v);
  for (float v : uncond) out.insert(out.end(), kRow, v);
  return out;
}

TEST(PrefillRows, VariationsOfOnePromptComputeItsTwoRowsOnly) {
  const auto x = rows_of({1, 1, 1, 1}, {2, 2, 2, 2});
  EXPECT_EQ(prefill_rows_to_compute(x.data(), 8, true, kRow), 2);
  const auto no_cfg = rows_of({3, 3, 3}, {});
  EXPECT_EQ(prefill_rows_to_compute(no_cfg.data(), 3, false, kRow), 1);
}

TEST(PrefillRows, DistinctPromptsComputeEveryRow) {
  const auto cond_differs = rows_of({1, 1, 5, 1}, {2, 2, 2, 2});
  EXPECT_EQ(prefill_rows_to_compute(cond_differs.data(), 8, true, kRow), 8);
  const auto uncond_differs = rows_of({1, 1, 1, 1}, {2, 2, 2, 7});
  EXPECT_EQ(prefill_rows_to_compute(uncond_differs.data(), 8, true, kRow), 8);
  // one value in the middle of a row is enough
  auto one_value = rows_of({1, 1}, {2, 2});
  one_value[kRow + 3] = 1.5f;
  EXPECT_EQ(prefill_rows_to_compute(one_value.data(), 4, true, kRow), 4);
}

TEST(PrefillRows, OnePromptIsComputedAsItIs) {
  const auto x = rows_of({1}, {2});
  EXPECT_EQ(prefill_rows_to_compute(x.data(), 2, true, kRow), 2);
  EXPECT_EQ(prefill_rows_to_compute(x.data(), 1, false, kRow), 1);
}

// Equal values with other bits (0 and -0) are not shared: the copies must be what the computation would have given.
TEST(PrefillRows, RowsAreComparedBitwise) {
  const auto zero = rows_of({0.0f, -0.0f}, {2, 2});
  EXPECT_EQ(prefill_rows_to_compute(zero.data(), 4, true, kRow), 4);
  const auto nan = rows_of({std::nanf(""), std::nanf("")}, {2, 2});
  EXPECT_EQ(prefill_rows_to_compute(nan.data(), 4, true, kRow), 2);
}

}  // namespace
