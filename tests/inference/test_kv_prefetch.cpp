// The multi-row fused MLP's L2 prefetch of the next attention's keys and values (inference/src/cuda/gpt_kv_prefetch.h),
// checked on the host: without a cap the ranges it requests are exactly the cache slots the decode attention reads
// (gpt_attention.cuh's rule: splits of 32 keys over the prefix, the current slot excluded, splits wholly inside the
// cond slots read from the shared prefix rows), each once; with a cap, the last rows' ranges come first and the bytes
// stay within it. A prefetch changes no arithmetic, so what it can get wrong is which bytes it asks for.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "cuda/gpt_kv_prefetch.h"

namespace {
using namespace cubeforge::cuda::detail;

constexpr int kH = 12, kAch = 32, kSlotBytes = 256;
using Slot = std::tuple<int, int, bool>;  // (row * H + head of the cache read, slot, values)

// What the attention reads for row r: the splits of the prefix [0, cur]; a split wholly inside [0, coff) reads row 0's
// (r < P) or row P's (r >= P) cache when the prefix rows are shared; the current slot comes from this step's qkv.
std::set<Slot> attention_reads(int R, int coff, int pos, int prefix_rows) {
  std::set<Slot> s;
  const int cur = coff + pos, L = cur + 1;
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < kH; ++h)
      for (int j0 = 0; j0 < L; j0 += kAch) {
        const bool remap = prefix_rows > 0 && j0 + kAch <= coff;
        const int rr = remap ? (r < prefix_rows ? 0 : prefix_rows) : r;
        for (int j = j0; j < j0 + kAch && j < L; ++j)
          if (j != cur)
            for (bool v : {false, true}) s.insert({rr * kH + h, j, v});
      }
  return s;
}

std::set<Slot> prefetched(int R, int coff, int pos, int prefix_rows, unsigned long long cap, size_t* ranges,
                          unsigned long long* bytes) {
  std::set<Slot> s;
  *ranges = 0;
  *bytes = 0;
  KvPfRange rg{};
  for (int i = 0; kv_prefetch_range(i, R, kH, coff, pos, prefix_rows, kAch, cap, kSlotBytes, rg); ++i) {
    ++*ranges;
    *bytes += (unsigned long long)(rg.end - rg.first) * kSlotBytes;
    for (int j = rg.first; j < rg.end; ++j) EXPECT_TRUE(s.insert({rg.rh, j, rg.values}).second) << "slot twice";
  }
  return s;
}

TEST(KvPrefetch, UncappedRangesAreExactlyWhatTheAttentionReads) {
  for (int prefix_rows : {0, 4})
    for (int coff : {78, 77, 64})
      for (int pos : {0, 1, 31, 512, 1024}) {
        size_t n = 0;
        unsigned long long bytes = 0;
        const auto got = prefetched(8, coff, pos, prefix_rows, ~0ull, &n, &bytes);
        EXPECT_EQ(n, (size_t)8 * kH * 2);
        EXPECT_EQ(got, attention_reads(8, coff, pos, prefix_rows))
            << "prefix_rows " << prefix_rows << " coff " << coff << " pos " << pos;
      }
  // the single block's layout (no cond slots) and 3 rows
  size_t n = 0;
  unsigned long long bytes = 0;
  EXPECT_EQ(prefetched(3, 0, 40, 0, ~0ull, &n, &bytes), attention_reads(3, 0, 40, 0));
}

TEST(KvPrefetch, TheCapTakesTheLastRowsFirstAndBoundsTheBytes) {
  const int R = 8, coff = 78, pos = 900;
  const unsigned long long per = (unsigned long long)(coff + pos) * kSlotBytes;  // one range, own rows (no sharing)
  for (unsigned long long cap : {per, 5 * per + 1, 24ull << 20}) {
    size_t n = 0;
    unsigned long long bytes = 0;
    prefetched(R, coff, pos, 0, cap, &n, &bytes);
    EXPECT_EQ(n, (size_t)((cap + per - 1) / per));
    EXPECT_LE(bytes, cap + per) << "at most one range beyond the cap";
  }
  // the first ranges are the last (row, head)'s keys then values, then the head before it
  KvPfRange a{}, b{}, c{};
  ASSERT_TRUE(kv_prefetch_range(0, R, kH, coff, pos, 0, kAch, ~0ull, kSlotBytes, a));
  ASSERT_TRUE(kv_prefetch_range(1, R, kH, coff, pos, 0, kAch, ~0ull, kSlotBytes, b));
  ASSERT_TRUE(kv_prefetch_range(2, R, kH, coff, pos, 0, kAch, ~0ull, kSlotBytes, c));
  EXPECT_EQ(a.rh, R * kH - 1);
  EXPECT_FALSE(a.values);
  EXPECT_EQ(b.rh, R * kH - 1);
  EXPECT_TRUE(b.values);
  EXPECT_EQ(c.rh, R * kH - 2);
  // nothing past the last range, and a zero cap asks for nothing
  EXPECT_FALSE(kv_prefetch_range(R * kH * 2, R, kH, coff, pos, 0, kAch, ~0ull, kSlotBytes, a));
  EXPECT_FALSE(kv_prefetch_range(0, R, kH, coff, pos, 0, kAch, 0, kSlotBytes, a));
}

}  // namespace
