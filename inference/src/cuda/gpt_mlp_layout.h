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

}  // namespace cubeforge::cuda::detail
