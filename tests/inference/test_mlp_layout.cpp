// The fused CUDA MLP's down-proj weight layout (inference/src/cuda/gpt_mlp_layout.h), checked on the host: the
// kernel copies each block's stages as single contiguous bulk copies and reads a lane's MMA fragment as 8 contiguous
// bytes, so the layout must be a permutation with exactly those ranges. (The kernel itself runs in cuda-check on a GPU.)
#include <gtest/gtest.h>

#include <vector>

#include "cuda/gpt_mlp_layout.h"

namespace {
using namespace cubeforge::cuda::detail;

TEST(MlpLayout, DownProjIsAPermutationWithContiguousBlocksStagesAndFragments) {
  const size_t total = (size_t)MLP_D * MLP_F;
  std::vector<unsigned char> seen(total, 0);
  size_t bad_range = 0, bad_stage = 0, bad_fragment = 0, repeats = 0;
  for (long n = 0; n < MLP_D; ++n)
    for (long k = 0; k < MLP_F; ++k) {
      const size_t o = mlp_dn_off(n, k);
      ASSERT_LT(o, total) << "n " << n << " k " << k;
      repeats += seen[o]++ != 0;
      // block b = k / 48 owns one contiguous range of D x 48 elements
      const size_t b = (size_t)(k / MLP_HS), span = (size_t)MLP_D * MLP_HS;
      bad_range += o < b * span || o >= (b + 1) * span;
      // its down-proj stage j (24 output groups = 192 rows) is one bulk copy of MLP_DN_BYTES from mlp_dn_stage(b, j)
      const int j = (int)(n / (8 * MLP_DN_GPS));
      const size_t s0 = mlp_dn_stage((int)b, j);
      bad_stage += o < s0 || o >= s0 + MLP_DN_BYTES / 2;
      // lane (g = n % 8, t4 = (k % 16) / 4) reads 4 consecutive values at lane * 4 of a 256-byte (128-element) block
      const size_t lane = (size_t)(4 * (n % 8) + (k % 16) / 4);
      bad_fragment += o % 128 != lane * 4 + k % 4;
    }
  EXPECT_EQ(repeats, 0u);
  EXPECT_EQ(bad_range, 0u);
  EXPECT_EQ(bad_stage, 0u);
  EXPECT_EQ(bad_fragment, 0u);
  for (size_t o = 0; o < total; ++o) ASSERT_EQ(seen[o], 1) << "offset " << o << " never written";
  // consecutive stages of a block follow each other
  EXPECT_EQ(mlp_dn_stage(0, 1) - mlp_dn_stage(0, 0), (size_t)MLP_DN_BYTES / 2);
  EXPECT_EQ(mlp_dn_stage(1, 0), (size_t)MLP_D * MLP_HS);
}

}  // namespace
