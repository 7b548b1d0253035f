// The fused CUDA MLP's down-proj weight layout and its tagged partials (inference/src/cuda/gpt_mlp_layout.h), checked
// on the host: the kernel copies each block's stages as single contiguous bulk copies and reads a lane's MMA fragment
// as 8 contiguous bytes, so the layout must be a permutation with exactly those ranges; the final sum's reads must
// meet the writes. (The kernel itself runs in cuda-check on a GPU.)
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

// The one-prompt kernel's tagged partials: each block's lanes write every (group, row, column) word of their own once,
// and each reducer's items read, for their output, exactly the 128 blocks' words (in the subsets' order), for every
// reducer count the engine may choose (the final sum must not lose or repeat a partial).
TEST(MlpLayout, TaggedPartialsAreWrittenOnceAndEachSumReadsEveryBlock) {
  std::vector<unsigned char> written(MLP_TAG_WORDS, 0);
  for (int n8 = 0; n8 < MLP_D / 8; ++n8)
    for (int b = 0; b < MLP_NB; ++b)
      for (int r = 0; r < MLP_TAG_ROWS; ++r)
        for (int c = 0; c < 8; c += 2) {  // a lane stores the words of columns c, c + 1 together (16 bytes)
          const size_t o = mlp_tag_off(n8, b, r, c);
          ASSERT_LT(o + 1, MLP_TAG_WORDS);
          ASSERT_EQ(o % 2, 0u) << "a 16-byte store must be aligned";
          ASSERT_EQ(written[o]++, 0) << "group " << n8 << " block " << b;
          ASSERT_EQ(written[o + 1]++, 0);
        }
  for (size_t o = 0; o < MLP_TAG_WORDS; ++o) ASSERT_EQ(written[o], 1) << "word " << o;
  EXPECT_EQ(MLP_TAG_BSTEP, mlp_tag_off(0, MLP_SUBSETS, 0, 0));

  const int per = MLP_NB / MLP_SUBSETS;
  for (const int nred : {32, 64, 96, 128}) {
    std::vector<int> group_seen(MLP_D / 8, 0);
    for (int j = 0; j < nred; ++j)
      for (int gi = 0; gi < mlp_reducer_groups(j, nred); ++gi) {
        const int n8 = j + gi * nred;
        ASSERT_LT(n8, MLP_D / 8) << "nred " << nred << " reducer " << j;
        ++group_seen[n8];
        for (int o = 0; o < MLP_TAG_ROWS * 8; ++o) {  // output o = 8 r + c of the group
          std::vector<int> block_seen(MLP_NB, 0);
          for (int sub = 0; sub < MLP_SUBSETS; ++sub)
            for (int i = 0; i < per; ++i) {
              const size_t read = mlp_tag_off(n8, sub, 0, o) + i * MLP_TAG_BSTEP;
              const int blk = sub + MLP_SUBSETS * i;
              ASSERT_EQ(read, mlp_tag_off(n8, blk, o / 8, o % 8)) << "nred " << nred << " group " << n8;
              ++block_seen[blk];
            }
          for (int blk = 0; blk < MLP_NB; ++blk) ASSERT_EQ(block_seen[blk], 1) << "block " << blk;
        }
      }
    for (int n8 = 0; n8 < MLP_D / 8; ++n8) ASSERT_EQ(group_seen[n8], 1) << "nred " << nred << " group " << n8;
  }
}

}  // namespace
