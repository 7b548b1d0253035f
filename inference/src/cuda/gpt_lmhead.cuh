// The decode lm_head streamed through a shared-memory ring (session 20): LN + lm_head GEMV + guidance + argmax (+ the
// token's emission) in one launch of 128 blocks at <= 8 rows. Block b owns vocabulary rows [128 b, 128 b + 128), i.e.
// 16 consecutive 8-row groups of the blocked layout (384 KB, contiguous); a producer warp streams them through a ring
// of 32 KB stages (4 chunks of 32 columns of every group, 16 bulk copies issued by 16 lanes), the first ring-full
// requested before griddepcontrol.wait; 16 consumer warps each run one 8-row group over the whole K. The persistent
// kernel it replaces (GemvLm: tiles of 8 outputs, 8 warps splitting K, 4 rounds of tiles) took ~22 us for 12 us of
// bytes. Per output the MMAs are the persistent kernel's, in its order: chunk kc goes into accumulator kc % 8 (the
// warp that held it there), and the 8 accumulators are summed in order from 0 as its cross-warp reduction does, so the
// logits, and with them the tokens, are bitwise the same. docs/cuda-gpt.md ("Session 20") has the measurements.
#pragma once
#include "gpt_gemv.cuh"
#include "gpt_lmhead_layout.h"

namespace cubeforge::cuda::detail {

static_assert(LMR_D == D, "the ring lm_head assumes the engine's width");

struct LmRingParams {
  GemvParams g;  // W (blocked), N, R <= 8, X / stats / eps, ctl, dyn, guided, raw, lm_val / lm_idx, tail, emission
  int nst;       // ring slots (<= LMR_MAXSLOTS)
  int pre;       // stages requested before griddepcontrol.wait (<= nst)
};

__global__ void __launch_bounds__(LMR_THREADS, 1) lm_ring_kernel(const LmRingParams q) {
  constexpr int AST = D + 32;
  const GemvParams& p = q.g;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const int b = blockIdx.x, R = p.R, S = q.nst;
  const TlStamp tls(p.tl);
  extern __shared__ __align__(16) unsigned char smem[];
  // the layout of ring_ln_smem (the fused MLP's head too), then the block's logits and the tail's flag
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + LMR_MAXSLOTS;
  unsigned char* ring = smem + 2 * LMR_MAXSLOTS * 8;
  bf16* act = reinterpret_cast<bf16*>(ring + (size_t)S * LMR_SLOT);
  float2* st = reinterpret_cast<float2*>(act + (size_t)2 * R * AST);
  float* outs = reinterpret_cast<float*>(st + 16);  // [8][LMR_ROWS]
  int* flag = reinterpret_cast<int*>(outs + 8 * LMR_ROWS);

  const bool producer = warp == LMR_CW;
  const uint64_t pol = policy_evict_first();
  // Stage i into its slot: chunks 4 i .. 4 i + 3 of each of the 16 groups (16 copies of 2 KB, lane j copies group j).
  auto issue = [&](int i, int slot) {  // slot = i % S
    if (lane == 0) mbar_expect_tx(&full[slot], LMR_SLOT);
    __syncwarp();
    if (lane < LMR_CW)
      bulk_g2s_hint(ring + (size_t)slot * LMR_SLOT + lane * LMR_CPS * 512,
                    p.W + lm_ring_copy_src(ring_src_block(p.wmask, b), i, lane), LMR_CPS * 512, &full[slot], pol);
  };
  if (producer) {
    if (lane == 0) {
      for (int s = 0; s < S; ++s) {
        mbar_init(&full[s], 1);
        mbar_init(&empty[s], LMR_CW);
      }
      mbar_fence_init();
    }
    __syncwarp();
    for (int i = 0; i < q.pre; ++i) issue(i, i % S);  // weights only: nothing the predecessor writes
  }
  pdl_handoff(tls);
  gemv_ln_prologue<D, LMR_CW + 1, 3>(p, act, st, R);  // 3 items of 8 columns per thread: one round at 8 rows
  __syncthreads();

  if (producer) {
    ring_fill(empty, S, q.pre, LMR_NST, issue);
  } else {
    const bool split = p.split != 0;
    float acc[LMR_REF_NW][4];
#pragma unroll
    for (int w = 0; w < LMR_REF_NW; ++w)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[w][i] = 0.f;
    // stages in pairs, so the accumulator of chunk kc = 8 i2 + 4 j + c is a compile-time index
    RingPos rp;
#pragma unroll 1
    for (int i2 = 0; i2 < LMR_NST / 2; ++i2) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int i = 2 * i2 + j;
        uint4 wb[LMR_CPS];
        ring_take(full, empty, ring, LMR_SLOT, rp, S, (size_t)warp * LMR_CPS * 512, wb);
#pragma unroll
        for (int c = 0; c < LMR_CPS; ++c) {
          uint4 a0, a1;
          gemv_act8<D>(p, act, true, R, g, (i * LMR_CPS + c) * 32 + t4 * 8, split, a0, a1);
          mma_chunk(acc[j * LMR_CPS + c], a0, a1, wb[c]);
        }
      }
    }
    // gemv_reduce's sums: per accumulator the lo rows (8..15) added to the hi rows, then the accumulators in order
    if (g < R) {
      float s0 = 0.f, s1 = 0.f;
#pragma unroll
      for (int w = 0; w < LMR_REF_NW; ++w) {
        s0 += split ? acc[w][0] + acc[w][2] : acc[w][0];
        s1 += split ? acc[w][1] + acc[w][3] : acc[w][1];
      }
      *reinterpret_cast<float2*>(outs + g * LMR_ROWS + warp * 8 + 2 * t4) = make_float2(s0, s1);
    }
  }
  __syncthreads();

  const int pos = __ldcg(&p.dyn->pos);
  const int n0 = b * LMR_ROWS, P = p.ctl->P, nparts = gridDim.x;
  lm_head_guide<LMR_ROWS>(p, outs, n0, pos, P, LMR_THREADS);
  // the block's argmax per variation (one warp each; larger value, then smaller index: the order does not matter)
  if (warp < P) {
    float best = -INFINITY;
    int bi = 0x7fffffff;
    for (int c = lane; c < LMR_ROWS; c += 32) argmax_take(outs[warp * LMR_ROWS + c], n0 + c, best, bi);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      argmax_take(__shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, bi, o), best, bi);
    if (lane == 0) {
      p.lm_val[warp * nparts + b] = best;
      p.lm_idx[warp * nparts + b] = bi;
    }
  }
  if (p.tail) lm_head_tail(p, flag, nparts, pos, P, LMR_THREADS);
}

}  // namespace cubeforge::cuda::detail
