// The CUDA decode's per-card defaults (inference/src/cuda/gpt_card_rules.h), checked on the host: the H100's and the
// H200's memory clock and bus width give the settings measured best on each (docs/cuda-gpt.md, sessions 36-39),
// and a device that does not report them keeps the H200's.
#include <gtest/gtest.h>

#include "cuda/gpt_card_rules.h"

namespace {
using namespace cubeforge::cuda::detail;

constexpr double kH100 = peak_memory_bandwidth(2619000, 5120), kH200 = peak_memory_bandwidth(3201000, 6144);

TEST(CardRules, PeakBandwidthFromClockAndBusWidth) {
  EXPECT_NEAR(kH100, 3.352e12, 1e9);
  EXPECT_NEAR(kH200, 4.916e12, 1e9);
  EXPECT_EQ(peak_memory_bandwidth(0, 5120), 0.0);
  EXPECT_EQ(peak_memory_bandwidth(2619000, 0), 0.0);
}

// The ring's depth (session 36): the H100 gets the deeper ring measured there, the H200 and an unknown card keep 5.
TEST(CardRules, RingDepthFollowsTheMemorysPeakBandwidth) {
  for (int r = 1; r <= 16; ++r) {
    EXPECT_EQ(mlp_ring_depth(r, kH100), r <= 2 ? 7 : 6) << r << " rows";
    EXPECT_EQ(mlp_ring_depth(r, kH200), 5) << r << " rows";
    EXPECT_EQ(mlp_ring_depth(r, 0.0), 5) << r << " rows";
  }
}

// The early PDL triggers (sessions 37-38): the attention's and the o-proj's on the H100 (each measured faster there,
// both together faster still); neither on the H200 (the o-proj's measured slower) or an unknown card.
TEST(CardRules, AttentionTriggersEarlyEverywhereTheOprojOnlyOnSlowerMemory) {
  EXPECT_EQ(early_trigger_bits(kH100), 3);
  EXPECT_EQ(early_trigger_bits(kH200), 1);
  EXPECT_EQ(early_trigger_bits(0.0), 1);
}

}  // namespace
