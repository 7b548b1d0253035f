// The decode step's GEMV launchers: the persistent kernels (Gemv: tiles over a resident grid) and the one-round
// kernels (Gemv1: every item requested before griddepcontrol.wait), their shared-memory sizes, occupancy and grids,
// and the configurations the engine uses (qkv, o-proj, gate/up, down-proj, lm_head). Host code over the kernels of
// gpt_gemv.cuh; the engine's step (gpt_engine_step.cuh) enqueues them.
#pragma once
#include "gpt_kernels.cuh"

namespace cubeforge::cuda::detail {

// ---- GEMV configurations (outputs per block = 8 NTILE, NW warps along K, KSPLIT blocks along K) ---------------
// A GEMV's input in shared memory (hi + lo rows of K + 32 columns; gemv_stage_input): LN inputs always, non-LN
// inputs when they take at most kActSmemMax bytes (session 5). Shared by the persistent and one-round launchers.
template <int K, bool LN>
struct GemvInput {
  static constexpr size_t kActSmemMax = 100 * 1024;
  static size_t act_bytes(int R) { return ((size_t)2 * R * (K + 32) * 2 + 15) & ~size_t(15); }
  static bool act_smem(int R) { return !LN && act_bytes(R) <= kActSmemMax; }
};
// Persistent GEMV (gemv_kernel): serves every row count (the 16-row batch-8 path always) and the shapes the one-round
// kernel cannot take. MINB applies to R <= 8 rows; the 16-row instantiation always takes MINB 1.
template <int K, int NTILE, int NW, int KSPLIT, int EPI, bool LN, int MINB = 1, int PIPE = 0>
struct Gemv : GemvInput<K, LN> {
  using GemvInput<K, LN>::act_bytes;
  using GemvInput<K, LN>::act_smem;
  static constexpr int NT = 8 * NTILE;
  static size_t smem(int R, bool act = false) {
    size_t s = LN ? act_bytes(R) + 16 * sizeof(float2) : (act ? act_bytes(R) : 0);  // hi + lo rows
    return s + (size_t)NW * NTILE * 128 * 4 + 16 * NT * 4 + 32 * 4;
  }
  static inline int occ[2] = {1, 1};  // resident blocks per SM (M16 = false / true)
  // Largest dynamic shared memory of a launch with r0..r1 rows (the staged input is dropped above kActSmemMax, so
  // the largest R is not always the largest launch: session 5's first staged build failed on this).
  static size_t smem_max(int r0, int r1) {
    size_t m = 0;
    for (int r = r0; r <= r1; ++r) m = std::max(m, smem(r, act_smem(r)));
    return m;
  }
  static void prepare() {
    CF_CUDA(cudaFuncSetAttribute(gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, true, 1, PIPE>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_max(9, 16)));
    CF_CUDA(cudaFuncSetAttribute(gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, false, MINB, PIPE>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_max(1, 8)));
    CF_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[1], gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, true, 1, PIPE>,
                                                          NW * 32, smem(16)));
    CF_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[0], gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, false, MINB, PIPE>,
                                                          NW * 32, smem(8)));
    occ[0] = std::max(occ[0], 1);
    occ[1] = std::max(occ[1], 1);
  }
  static void prefer_carveout(int pct) {  // both kernels' preferred shared-memory carveout (cuda_common.cuh)
    CF_CUDA(cudaFuncSetAttribute(gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, true, 1, PIPE>,
                                 cudaFuncAttributePreferredSharedMemoryCarveout, pct));
    CF_CUDA(cudaFuncSetAttribute(gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, false, MINB, PIPE>,
                                 cudaFuncAttributePreferredSharedMemoryCarveout, pct));
  }
  static int blocks(int N) { return (N + NT - 1) / NT * KSPLIT; }  // tiles (work items)
  // Persistent grid: as many blocks as fit (one wave), each walking its tiles.
  // max_blocks > 0: at most that many blocks (each then walks more tiles)
  static void run(const GemvParams& p0, cudaStream_t s, bool pdl, int nsm, int max_blocks = 0) {
    GemvParams p = p0;
    const bool m16 = p.R > 8;
    p.act_smem = act_smem(p.R) ? 1 : 0;
    const size_t sm = smem(p.R, p.act_smem != 0);
    int nb = std::min(blocks(p.N), nsm * occ[m16]);
    if (max_blocks > 0) nb = std::min(nb, max_blocks);
    const dim3 grid(nb);
    if (m16)
      launch(gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, true, 1, PIPE>, grid, dim3(NW * 32), sm, s, pdl, p);
    else
      launch(gemv_kernel<K, NTILE, NW, KSPLIT, EPI, LN, false, MINB, PIPE>, grid, dim3(NW * 32), sm, s, pdl, p);
  }
};
// One-round GEMV (gemv1_kernel, session 7): R <= 8 rows, at most MAXT work items per block, every weight byte
// requested before griddepcontrol.wait. run() returns false (caller falls back to the persistent kernel) when the
// launch does not fit: more rows, fewer resident blocks than total / MAXT, or a grid that is not a multiple of KSPLIT.
// NSM (session 8): the last NSM items of a block are held in shared memory (bulk copies) instead of registers.
template <int K, int NTILE, int NW, int KSPLIT, int EPI, int MAXT, int NSM = 0>
struct Gemv1 : GemvInput<K, EPI != EPI_RESID> {
  static constexpr int NT = 8 * NTILE;
  static constexpr bool LN = EPI != EPI_RESID;
  using GemvInput<K, LN>::act_bytes;
  using GemvInput<K, LN>::act_smem;
  static size_t smem(int R, bool act) {
    size_t s = LN ? act_bytes(R) + 16 * sizeof(float2) : (act ? act_bytes(R) : 0);
    if (LN && NSM == 0 && gemv_ln_staged<K>(R, 2, NW * 32)) s += (size_t)R * K * 4;  // staged input rows
    const size_t ws = (NSM > 0 ? 16 : 0) + (size_t)NSM * (K / KSPLIT / (32 * NW)) * NTILE * NW * 32 * 16;  // mbarrier + weight items
    return ws + s + (size_t)NW * NTILE * 128 * 4 + (size_t)MAXT * 16 * NT * 4 + 32 * 4;
  }
  static inline int occ = 0;  // resident blocks per SM at the largest launch (R = 8)
  static void prepare() {
    size_t m = 0;
    for (int r = 1; r <= 8; ++r) m = std::max(m, smem(r, act_smem(r)));
    CF_CUDA(cudaFuncSetAttribute(gemv1_kernel<K, NTILE, NW, KSPLIT, EPI, MAXT, NSM>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)m));
    occ = 0;
    for (int r = 1; r <= 8; ++r) {  // the smallest occupancy over the row counts it may serve
      int o = 0;
      CF_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, gemv1_kernel<K, NTILE, NW, KSPLIT, EPI, MAXT, NSM>,
                                                            NW * 32, smem(r, act_smem(r))));
      occ = r == 1 ? o : std::min(occ, o);
    }
  }
  static void prefer_carveout(int pct) {  // its kernel's preferred shared-memory carveout (cuda_common.cuh)
    CF_CUDA(cudaFuncSetAttribute(gemv1_kernel<K, NTILE, NW, KSPLIT, EPI, MAXT, NSM>,
                                 cudaFuncAttributePreferredSharedMemoryCarveout, pct));
  }
  static int grid_for(int N, int nsm) {  // the grid of a launch over N outputs (one wave)
    const int total = (N + NT - 1) / NT * KSPLIT;
    const int grid = std::min(total, nsm * occ);
    return grid - grid % KSPLIT;
  }
  // max_grid > 0 caps the grid, never below the fewest blocks that hold all items (a multiple of KSPLIT): 1 asks
  // for those fewest blocks
  static bool run(const GemvParams& p0, cudaStream_t s, bool pdl, int nsm, int max_grid = 0) {
    // shared-memory items are bulk copies of whole 8-row groups of the blocked layout
    if (p0.R > 8 || occ < 1 || (NSM > 0 && (p0.N % NT || !p0.blocked))) return false;
    const int total = (p0.N + NT - 1) / NT * KSPLIT;
    int grid = grid_for(p0.N, nsm);
    if (max_grid > 0 && max_grid < grid) {
      const int need = (total + MAXT - 1) / MAXT;
      grid = std::min(grid, std::max(max_grid, need + (KSPLIT - need % KSPLIT) % KSPLIT));
    }
    if (grid < 1 || (long)grid * MAXT < total) return false;
    GemvParams p = p0;
    p.act_smem = act_smem(p.R) ? 1 : 0;
    launch(gemv1_kernel<K, NTILE, NW, KSPLIT, EPI, MAXT, NSM>, dim3(grid), dim3(NW * 32), smem(p.R, p.act_smem != 0), s,
           pdl, p);
    return true;
  }
};
// The decode step's GEMVs. At <= 8 rows (batch <= 4) qkv, gate/up and the down-proj are one-round kernels; the
// persistent kernels serve 16 rows and any launch the one-round kernels refuse. Everything else measured in sessions
// 3-10 (other tilings, split-K widths, register counts, the shared-memory ring, L2 prefetch windows, the full-K
// down-proj) was slower and was removed in session 11 (docs/cuda-gpt.md, "Session 11").
// qkv: 576 items on 264 blocks. At <= 2 rows (one prompt) the third item (24 KB) sits in shared memory (session 11):
// 94 instead of 122 registers, so the attention kernel's blocks fit beside it and request their keys and values
// ~4 us earlier (-0.4% TPOT); with more rows that version measured slower (batch 4 +1%), so they keep three
// register items, on 192 blocks since session 25 (qkv_blocks_wide).
using Gemv1Qkv = Gemv1<D, 1, 8, 1, EPI_QKV, 3>;
using Gemv1QkvSm = Gemv1<D, 1, 8, 1, EPI_QKV, 3, 1>;
using Gemv1Down = Gemv1<F, 1, 8, 4, EPI_RESID, 3>;  // 768 items (192 tiles x 4-way split-K) on 264 blocks
// Session 8: gate/up as one round, 768 items of 16 outputs on 264 blocks: two in registers, the third (48 KB) in
// shared memory (at R = 8: 110 KB per block, still two blocks per SM).
using Gemv1GateUp = Gemv1<D, 2, 8, 1, EPI_SWIGLU, 3, 1>;
// Persistent kernels. PIPE 1 (session 7; both register sets requested before griddepcontrol.wait, a set refilled
// right after its MMAs) for the 8-output tiles; gate/up's 16-output tiles keep PIPE 0: with PIPE 1 they spill at 128
// registers and measured slower (session 7). Tiles of 8 outputs for qkv / o-proj / down-proj / lm_head (the lm_head
// had 16 until session 11: 164 B of spill; 8 spill nothing, same logits bitwise, -0.1%), 4-way split-K for the
// down-proj (K 6144), <= 128 registers so two blocks share an SM.
using GemvQkv = Gemv<D, 1, 8, 1, EPI_QKV, true, 2, 1>;
using GemvOproj = Gemv<D, 1, 8, 1, EPI_RESID, false, 2, 1>;
using GemvGateUp = Gemv<D, 2, 8, 1, EPI_SWIGLU, true, 2>;
using GemvDown = Gemv<F, 1, 8, 4, EPI_RESID, false, 2, 1>;
using GemvLm = Gemv<D, 1, 8, 1, EPI_LMHEAD, true, 2, 1>;
static_assert(LMR_REF_NW == 8, "lm_ring_kernel reproduces GemvLm's 8-warp K split (bitwise equal logits)");

}  // namespace cubeforge::cuda::detail
