// The ring lm_head's tiling, weight stages and shared-memory sizes (gpt_lmhead.cuh), as plain constexpr C++ so that
// the engine's launch limits and tests/inference/test_lmhead_layout.cpp read the same definitions as the kernel.
#pragma once
#include <algorithm>
#include <cstddef>

#include "gpt_mlp_layout.h"  // CF_MLP_HD, MLP_D

namespace cubeforge::cuda::detail {

constexpr int LMR_D = MLP_D;                      // the GPT's width (K of the lm_head)
constexpr int LMR_CW = 16;                        // consumer warps, one 8-row group each
constexpr int LMR_THREADS = (LMR_CW + 1) * 32;    // + the producer warp
constexpr int LMR_ROWS = LMR_CW * 8;              // vocabulary rows per block
constexpr int LMR_CPS = 4;                        // 32-column chunks per stage
constexpr int LMR_NST = LMR_D / 32 / LMR_CPS;     // 12 stages per block
constexpr int LMR_SLOT = LMR_CW * LMR_CPS * 512;  // bytes per ring slot (32 KB)
constexpr int LMR_MAXSLOTS = 8;
constexpr int LMR_DEFAULT_SLOTS = 6;
constexpr int LMR_REF_NW = 8;  // warps of the persistent lm_head along K: its chunk kc sits in accumulator kc % 8
static_assert(LMR_NST % 2 == 0 && 2 * LMR_CPS == LMR_REF_NW, "stage pairs cover the 8 accumulators once");

// Element offset, in the blocked layout (8-row x 32-column blocks of 256 elements, group-major), of the bulk copy
// that brings group j (< LMR_CW) of block b its chunks LMR_CPS i .. LMR_CPS i + 3 for stage i: 2 KB, contiguous.
CF_MLP_HD constexpr size_t lm_ring_copy_src(int b, int i, int j) {
  return (((size_t)b * LMR_CW + j) * (LMR_D / 32) + (size_t)i * LMR_CPS) * 256;
}

// Shared memory of a launch with R rows and nst slots: mbarriers, ring, LN input rows (hi, lo), row stats, the
// block's logits [8][128], the tail's flag + tokens.
CF_MLP_HD constexpr size_t lm_ring_smem(int R, int nst) {
  return ring_ln_smem(LMR_MAXSLOTS, nst, LMR_SLOT, R) + (size_t)8 * LMR_ROWS * 4 + 32 * 4;
}
// Ring slots of a launch with R rows: `want` (LMR_DEFAULT_SLOTS when <= 0, at most LMR_MAXSLOTS), fewer where they
// do not fit in `optin` bytes (at least 2).
constexpr int lm_ring_slots(int R, size_t optin, int want = 0) {
  int n = want > 0 ? std::min(want, LMR_MAXSLOTS) : LMR_DEFAULT_SLOTS;
  while (n > 2 && lm_ring_smem(R, n) > optin) --n;
  return n;
}
// The kernel's dynamic shared-memory limit for launches of 1..rmax rows: the largest of them. Fewer rows take more
// slots, so the largest launch is not always the one with the most rows (6 slots at 4 rows take more than 5 at 8).
constexpr size_t lm_ring_smem_limit(int rmax, size_t optin, int want = 0) {
  size_t big = 0;
  for (int r = 1; r <= rmax; ++r) big = std::max(big, lm_ring_smem(r, lm_ring_slots(r, optin, want)));
  return big;
}

}  // namespace cubeforge::cuda::detail
