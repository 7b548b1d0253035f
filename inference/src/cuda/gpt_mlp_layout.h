// The fused decode MLP's tiling and its down-proj weight layout (gpt_mlp.cuh), as plain constexpr C++ so that the
// host (the weight conversion, tests/inference/test_mlp_layout.cpp) and the kernel read the same definitions.
#pragma once
#include <cstddef>

#if defined(__CUDACC__)
#define CF_MLP_HD __host__ __device__
#else
#define CF_MLP_HD
#endif

namespace cubeforge::cuda::detail {

constexpr int MLP_D = 1536, MLP_F = 6144;          // the Cube 3D GPT's width and MLP width (checked in gpt_mlp.cuh)
constexpr int MLP_HS = 48;                         // hidden units per block
constexpr int MLP_NB = MLP_F / MLP_HS;             // 128 blocks, all resident at once (the final sum waits for all)
constexpr int MLP_CW = 12;                         // consumer warps: one gate/up 8-row group each
constexpr int MLP_KS = MLP_HS / 16;                // k16 steps of the down-proj
constexpr int MLP_DN_GPS = 2 * MLP_CW;             // output groups (8 rows) per down-proj stage, 2 per warp
constexpr int MLP_DN_ST = MLP_D / 8 / MLP_DN_GPS;  // 8 down-proj stages of 18 KB
constexpr int MLP_DN_BYTES = MLP_DN_GPS * MLP_KS * 256;  // bytes of a down-proj stage
static_assert(MLP_NB * MLP_HS == MLP_F && MLP_HS % 16 == 0 && MLP_DN_ST * MLP_DN_GPS * 8 == MLP_D, "tiling");

// Element offset of W_dn[n][k] (n < D, k < F) in the hidden-slice layout: block b = k / 48 holds its 48 columns as
// D / 8 x 3 blocks of 8 rows x 16 columns (256 B, row-major), ordered (row group, k16 step), so a block's down-proj
// weights are one contiguous range in consumption order and a lane's MMA B fragment is 8 contiguous bytes.
CF_MLP_HD constexpr size_t mlp_dn_off(long n, long k) {
  return ((size_t)((k / MLP_HS) * (MLP_D / 8) + n / 8) * MLP_KS + (k % MLP_HS) / 16) * 128 + (n % 8) * 16 + k % 16;
}
// First element of block b's down-proj stage j (MLP_DN_GPS output groups x MLP_KS k16 steps, one bulk copy).
CF_MLP_HD constexpr size_t mlp_dn_stage(int b, int j) {
  return ((size_t)b * (MLP_D / 8) + (size_t)j * MLP_DN_GPS) * MLP_KS * 128;
}

// The head of a ring kernel's shared memory (the fused MLP, the ring lm_head): full and empty mbarriers for maxslots
// slots, nst ring slots of slot_bytes, the LN input rows (R hi rows then R lo rows of MLP_D + 32 bf16) and 16 row
// stats (float2); the kernel's own arrays follow (each kernel carves this layout at its start).
CF_MLP_HD constexpr size_t ring_ln_smem(int maxslots, int nst, int slot_bytes, int R) {
  return 2 * (size_t)maxslots * 8 + (size_t)nst * slot_bytes + (size_t)2 * R * (MLP_D + 32) * 2 + 16 * 8;
}

// The one-prompt kernel's final sum (gpt_mlp.cuh, TAGS). Partials: one tagged 64-bit word per output group n8,
// block b, row r < MLP_TAG_ROWS and column c < 8 of the group, all rows of a (group, block) together, so a reducer's
// item (group, subset s, output o = 8 r + c) reads blocks s, s + MLP_SUBSETS, ... as mlp_tag_off(n8, s, 0, o) +
// i * MLP_TAG_BSTEP. Reducer j of nred sums groups j, j + nred, ...: mlp_reducer_groups(j, nred) of them.
constexpr int MLP_TAG_ROWS = 2, MLP_SUBSETS = 8;
CF_MLP_HD constexpr size_t mlp_tag_off(int n8, int b, int r, int c) {
  return (((size_t)n8 * MLP_NB + b) * MLP_TAG_ROWS + r) * 8 + c;
}
constexpr size_t MLP_TAG_WORDS = (size_t)(MLP_D / 8) * MLP_NB * MLP_TAG_ROWS * 8;
constexpr size_t MLP_TAG_BSTEP = (size_t)MLP_SUBSETS * MLP_TAG_ROWS * 8;  // mlp_tag_off(0, MLP_SUBSETS, 0, 0)
// (counted, not divided: nred is a run-time value on the kernel's tail, where a division is a multi-instruction
// sequence; at most three groups there)
CF_MLP_HD constexpr int mlp_reducer_groups(int j, int nred) {
  int n = 0;
  for (int g = j; g < MLP_D / 8; g += nred) ++n;
  return n;
}

}  // namespace cubeforge::cuda::detail
