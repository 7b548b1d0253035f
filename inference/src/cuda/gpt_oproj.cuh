// The decode attention output projection split by head (session 14). Block (head h, slice s) of 192 multiplies head
// h's 128 attention outputs (as soon as the attention kernel has finished that head for every row: a per-head
// arrival count, not the end of the attention grid) into o-proj outputs [96 s, 96 s + 96), i.e. K range
// [128 h, 128 h + 128) of the o-proj, from 24 KB of weights it copied into shared memory before anything else. After
// one grid-wide arrival count every block sums the 12 heads' partials of its 8 outputs in head order, adds bias and
// residual and writes the LN stats, as the fused MLP does (gpt_mlp.cuh). docs/cuda-gpt.md ("Session 14").
#pragma once
#include "gpt_attention.cuh"
#include "gpt_gemv.cuh"

namespace cubeforge::cuda::detail {

constexpr int OPH_SL = 16;                   // output slices per head
constexpr int OPH_NB = H * OPH_SL;           // 192 blocks, all resident at once (the final sum waits for all)
constexpr int OPH_GROUPS = D / OPH_SL / 8;   // 12 output groups of 8 per block
constexpr int OPH_THREADS = 128;
constexpr int OPH_GPW = OPH_GROUPS / (OPH_THREADS / 32);  // 3 output groups per warp
constexpr int OPH_CH = HD / 32;              // a head's K range: four 32-column chunks of the blocked layout
static_assert(OPH_NB * 8 == D && OPH_GPW * (OPH_THREADS / 32) == OPH_GROUPS, "o-proj by head: tiling");
static_assert(MAXR * 8 <= OPH_THREADS, "final sum: one thread per (row, output) of the block's group");

struct OprojHeadParams {
  GemvParams g;               // W (blocked), R, split, A / A_lo (attention output hi / lo), bias, resid, stats_out,
                              // add2, save_y, tl
  unsigned* hdone;            // [H] the attention kernel's arrivals per head in this launch (reset here)
  // defer: the attention kernel leaves its split partials uncombined (AttnParams::defer); this kernel combines them
  // (attn_combine), so the head's count reaches R x nsplit; else R, and the head's outputs are read from g.A / g.A_lo
  int defer;
  const float* apart;         // the attention's partials [R][H][maxs][HD + 2]
  int maxs, coff, slot0_only; // as AttnParams (the split count of this step)
  const Dyn* dyn;
  int wait_attn;              // measurement knob: griddepcontrol.wait (the whole attention grid) before the final sum
  float* part;                // [H][R][D] per-head partial outputs
  unsigned long long* ctr;    // grid-wide arrival count, monotonic (a multiple of OPH_NB between launches)
  unsigned long long spin_limit;  // polls of a wait before the kernel traps (a head or a block never arrived)
};

// M16: more than 8 rows (hi and lo parts in separate MMAs); else the lo parts ride in MMA rows 8..15. Per output the
// same sums in the same order either way, so 1 and 8 prompts stay bitwise identical.
template <bool M16>
__global__ void __launch_bounds__(OPH_THREADS) oproj_head_kernel(const OprojHeadParams p) {
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const int b = blockIdx.x, h = b % H, sl = b / H, R = p.g.R;
  const TlStamp tls(p.g.tl);
  __shared__ __align__(128) uint4 ws[OPH_GROUPS * OPH_CH * 32];  // [group][chunk][lane]: 24 KB
  __shared__ __align__(8) uint64_t bar;
  constexpr int AS = HD + 8;  // row stride of the combined head outputs in shared memory (bf16)
  __shared__ __align__(16) bf16 act[2 * MAXR * AS];   // hi rows [R][AS], then lo rows
  __shared__ float cm[2 * ATT_MAXSPLIT], cl[2 * ATT_MAXSPLIT];
  __shared__ float xs[MAXR * 8];
  // weights first (nothing the predecessors write): group i's four chunks of head h are 2 KB in the blocked layout
  if (tid == 0) {
    mbar_init(&bar, 1);
    mbar_fence_init();
    const uint64_t pol = policy_evict_first();
    mbar_expect_tx(&bar, sizeof(ws));
#pragma unroll 1
    for (int i = 0; i < OPH_GROUPS; ++i)
      bulk_g2s_hint(ws + i * OPH_CH * 32, p.g.W + ((size_t)(sl * OPH_GROUPS + i) * (D / 32) + h * OPH_CH) * 256,
                    OPH_CH * 512, &bar, pol);
  }
  // this thread's output of the final sum (row r, column col of group b): bias and residual, also before the waits
  // (the residual was written three kernels back)
  const int RO = R * 8, col = b * 8 + tid % 8, r = tid / 8;
  float bias = 0.f, xr = 0.f, a2r = 0.f;
  if (tid < RO) {
    bias = bf(p.g.bias[col]);
    xr = __ldcg(p.g.resid + (size_t)r * D + col);
    if (p.g.add2) a2r = __ldcg(p.g.add2 + (size_t)r * D + col);
  }
  int nsplit = 1;
  if (p.defer) {  // the position was written by the previous step's lm_head
    const int L = p.slot0_only ? 1 : p.coff + __ldcg(&p.dyn->pos) + 1;
    nsplit = (L + ACH - 1) / ACH;
  }
  __syncthreads();  // the mbarrier's initialisation, before any thread waits on it
  if (tid == 0) {   // head h finished for every row (the attention kernel's per-head count)
    const unsigned target = (unsigned)(R * nsplit);
    unsigned long long n = 0;
    while (ld_acquire_u32(&p.hdone[h]) < target)
      if (++n > p.spin_limit) __trap();
  }
  __syncthreads();
  tls.waited();
  pdl_trigger();
  if (p.defer) {  // combine the head's splits, two rows at a time, into bf16 hi + lo rows
    for (int r0 = 0; r0 < R; r0 += 2) {
      const int nr = R - r0 < 2 ? R - r0 : 2;
      float o[2];
      attn_combine(p.apart, p.maxs, h, r0, nr, nsplit, cm, cl, o);
      for (int q = 0; q < nr; ++q) {
        const bf16 hi = __float2bfloat16_rn(o[q]);
        act[(r0 + q) * AS + tid] = hi;
        act[(MAXR + r0 + q) * AS + tid] = __float2bfloat16_rn(o[q] - __bfloat162float(hi));
      }
    }
    __syncthreads();
  }

  // ---- head h's outputs (hi, lo) of every row as MMA A fragments, then 3 output groups per warp -----------------
  const bool split = p.g.split != 0;
  uint4 a0[OPH_CH], a1[OPH_CH], l0[OPH_CH], l1[OPH_CH];
#pragma unroll
  for (int c = 0; c < OPH_CH; ++c) {
    const int k = h * HD + c * 32 + t4 * 8;
    if (p.defer) {
      const int kk = c * 32 + t4 * 8;
      const uint4 z = make_uint4(0, 0, 0, 0);
      a0[c] = g < R ? *reinterpret_cast<const uint4*>(act + g * AS + kk) : z;
      l0[c] = (split && g < R) ? *reinterpret_cast<const uint4*>(act + (MAXR + g) * AS + kk) : z;
      a1[c] = (M16 && g + 8 < R) ? *reinterpret_cast<const uint4*>(act + (g + 8) * AS + kk) : z;
      l1[c] = (M16 && split && g + 8 < R) ? *reinterpret_cast<const uint4*>(act + (MAXR + g + 8) * AS + kk) : z;
      if (!M16) a1[c] = l0[c];
    } else if constexpr (M16) {
      gemv_load_act<D, true>(p.g, nullptr, false, R, g, k, split, a0[c], a1[c], l0[c], l1[c]);
    } else {
      gemv_act8<D>(p.g, nullptr, false, R, g, k, split, a0[c], a1[c]);
    }
  }
  mbar_wait(&bar, 0);
#pragma unroll
  for (int q = 0; q < OPH_GPW; ++q) {
    const int grp = warp * OPH_GPW + q;
    float acc[4] = {0.f, 0.f, 0.f, 0.f}, acc2[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int c = 0; c < OPH_CH; ++c) {
      const uint4 w = ws[(grp * OPH_CH + c) * 32 + lane];
      mma_chunk(acc, a0[c], a1[c], w);
      if (M16 && split) mma_chunk(acc2, l0[c], l1[c], w);
    }
    float* dst = p.part + (size_t)h * R * D + (sl * OPH_GROUPS + grp) * 8 + 2 * t4;
    if constexpr (M16) {
      if (g < R) *reinterpret_cast<float2*>(dst + (size_t)g * D) = make_float2(acc[0] + acc2[0], acc[1] + acc2[1]);
      if (g + 8 < R)
        *reinterpret_cast<float2*>(dst + (size_t)(g + 8) * D) = make_float2(acc[2] + acc2[2], acc[3] + acc2[3]);
    } else if (g < R) {
      *reinterpret_cast<float2*>(dst + (size_t)g * D) = make_float2(acc[0] + acc[2], acc[1] + acc[3]);
    }
  }
  __syncthreads();
  if (tid == 0) {
    if (p.wait_attn) pdl_wait();
    grid_arrive_wait(p.ctr, OPH_NB, p.spin_limit);
  }
  __syncthreads();
  if (b == 0 && tid < H) p.hdone[tid] = 0;  // every block has passed its head wait

  // ---- output group b: the 12 heads' partials in head order + bias + residual (+ add2), then the LN stats ------
  if (tid < RO) {
    float v[H];
#pragma unroll
    for (int i = 0; i < H; ++i) v[i] = __ldcg(p.part + ((size_t)i * R + r) * D + col);
    float y = 0.f;
#pragma unroll
    for (int i = 0; i < H; ++i) y += v[i];
    y = y + bias;
    float x = xr + y;
    if (p.g.add2) x = x + a2r;
    p.g.resid[(size_t)r * D + col] = x;
    if (p.g.save_y) p.g.save_y[(size_t)r * D + col] = y;
    xs[tid] = x;
  }
  __syncthreads();
  if (tid < R) reinterpret_cast<float2*>(p.g.stats_out)[(size_t)tid * NSLOT + b] = ln_stats8(xs + tid * 8);
}

}  // namespace cubeforge::cuda::detail
