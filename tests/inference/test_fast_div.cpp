// FastDiv (inference/src/cuda/fast_div.h), the CUDA kernels' division by a run-time row count, checked on the host
// against the integer division over the whole range the kernels use it for and beyond (the device path is the same
// high multiply, __umulhi).
#include <gtest/gtest.h>

#include "cuda/fast_div.h"

namespace {
using cubeforge::cuda::FastDiv;

TEST(FastDiv, EqualsIntegerDivisionForSmallOperands) {
  size_t bad = 0;
  for (unsigned d = 1; d <= 2048; ++d) {
    const FastDiv f(d);
    for (unsigned n = 0; n < (1u << 16); ++n)
      if (f.div(n) != n / d || f.mod(n) != n % d) ++bad;
  }
  EXPECT_EQ(bad, 0u);
}

TEST(FastDiv, EqualsIntegerDivisionForLargeDivisors) {
  size_t bad = 0;
  for (unsigned d = 2049; d < (1u << 16); d += 97) {
    const FastDiv f(d);
    for (unsigned n = 0; n < (1u << 16); n += 7)
      if (f.div(n) != n / d || f.mod(n) != n % d) ++bad;
  }
  EXPECT_EQ(bad, 0u);
}

}  // namespace
