// The fused decode MLP (session 13): LayerNorm + gate/up + SwiGLU + down-proj + residual add in one launch, split
// along the hidden dimension instead of along the outputs. Block b owns hidden units [48 b, 48 b + 48): its 96
// gate/up rows and the down-proj's 48 matching columns, so no block waits for another until the very end, where the
// 128 blocks' partial down-proj outputs are summed in a fixed order after one grid-wide arrival count. A producer
// warp streams the block's 432 KB of weights through a shared-memory ring by bulk copies, in consumption order and
// with no gap between gate/up and the down-proj; 12 consumer warps run the MMAs (one gate/up 8-row group each, over
// the whole K, so there is no cross-warp reduction). docs/cuda-gpt.md ("Session 13") has the measurements.
#pragma once
#include "gpt_gemv.cuh"
#include "fast_div.h"
#include "gpt_mlp_layout.h"

namespace cubeforge::cuda::detail {

static_assert(MLP_D == D && MLP_F == F, "the MLP tiling assumes the engine's widths");
constexpr int MLP_THREADS = (MLP_CW + 1) * 32;     // + the producer warp
constexpr int MLP_GU_CPS = 4;                      // 32-column chunks per gate/up stage
constexpr int MLP_GU_ST = D / 32 / MLP_GU_CPS;     // 12 gate/up stages of 24 KB
constexpr int MLP_NST = MLP_GU_ST + MLP_DN_ST;     // stages per block
constexpr int MLP_SLOT = MLP_CW * MLP_GU_CPS * 512;         // bytes per ring slot (a gate/up stage)
constexpr int MLP_MAXSLOTS = 16;
// MLP_SUBSETS (gpt_mlp_layout.h): the partials are summed in 8 interleaved subsets, then those in order
constexpr int MLP_HST = MLP_HS + 8;                // row stride of the hidden activations in shared memory (bf16)
static_assert(MLP_GU_ST * MLP_GU_CPS * 32 == D, "gate/up stages cover K (the down-proj tiling: gpt_mlp_layout.h)");
static_assert(MLP_NB % MLP_SUBSETS == 0 && 2 * MLP_NB >= D / 8, "reduction: at most two output groups per block");

struct MlpParams {
  GemvParams g;               // R, split, X / stats / eps (the LN input), resid, stats_out, add2, save_y, tl
  const bf16* Wgu;            // [2F][D] blocked, gate/up rows interleaved in 8-row groups (as the gate/up GEMV)
  const bf16* bgu;            // [2F] interleaved the same way
  const bf16* Wdn;            // down-proj in the hidden-slice layout (mlp_dn_off)
  const bf16* bdn;            // [D]
  float* part;                // [D / 8][MLP_NB][R][8] partial down-proj outputs
  unsigned long long* tagged;  // TAGS: MLP_TAG_WORDS partials tagged with the launch's epoch (mlp_tag_off, tag_pack)
  unsigned long long* ctr;    // grid-wide arrival count, monotonic (a multiple of MLP_NB between launches)
  int nst;                    // ring slots
  int pre;                    // stages requested before griddepcontrol.wait (<= nst)
  unsigned long long spin_limit;  // polls of the final wait before the kernel traps (a block never arrived)
  int nred;                   // the last nred blocks to arrive sum the partials, the others leave (mlp_reducers)
  unsigned long long* ph;     // phase stamps [MLP_NB][MLP_PH] (diagnostics, CF_DIAG_PHASES) or null
};
// Phase stamps (diagnostics: built with -DCF_DIAG_PHASES, on with the timeline, bit 21; compiled out otherwise): per
// block %globaltimer at 10 phases (words 0-9, named by the host's mlp_phase_report), its arrival rank (word
// MLP_PH_RANK), then per ring stage the producer's request (MLP_PH_STAGE + i) and consumer warp 0's return from the
// stage's full-barrier wait (MLP_PH_STAGE + MLP_NST + i).
// Last word (MLP_PH_SM, session 24): the block's SM.
constexpr int MLP_PH_RANK = 10, MLP_PH_STAGE = MLP_PH_RANK + 1, MLP_PH_SM = MLP_PH_STAGE + 2 * MLP_NST,
              MLP_PH = MLP_PH_SM + 1;
__device__ __forceinline__ void mlp_stamp(const MlpParams& p, int i, unsigned long long v) {
#ifdef CF_DIAG_PHASES
  if (p.ph) p.ph[blockIdx.x * MLP_PH + i] = v;
#endif
}
__device__ __forceinline__ void mlp_phase(const MlpParams& p, int i, int t = 0) {  // thread t stamps
#ifdef CF_DIAG_PHASES
  if ((int)threadIdx.x == t) mlp_stamp(p, i, gtimer());
#endif
}

// Load-time conversion of the fp32 down-proj [D][F] into the hidden-slice layout (mlp_dn_off).
__global__ void convert_mlp_down_kernel(const float* src, bf16* dst) {
  const long n = (long)D * F;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    dst[mlp_dn_off(i / F, i % F)] = __float2bfloat16_rn(src[i]);
}

// Shared memory of a launch with R rows and nst ring slots: mbarriers, ring, LN input rows (hi, lo), row stats,
// gate/up outputs [16][96], hidden activations (hi rows, lo rows). The final reduction reuses the ring.
__host__ __device__ constexpr size_t mlp_smem(int R, int nst) {
  return ring_ln_smem(MLP_MAXSLOTS, nst, MLP_SLOT, R) + 16 * 2 * MLP_HS * 4 + 2 * 16 * MLP_HST * 2;
}

__device__ __forceinline__ void mlp_consumer_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(MLP_CW * 32) : "memory");
}

// M16: more than 8 rows (two MMAs per weight fragment, hi and lo parts apart); else the lo parts ride in MMA rows
// 8..15. Per output the same sums in the same order either way, so 1 and 8 prompts stay bitwise identical.
// WIDE (more than 2 rows): more loads in flight in the LN prologue and the final sum, at the price of registers;
// without it (one prompt) at most 72 registers, so one qkv GEMV block fits beside the MLP block and starts early.
// The final sum: without WIDE (TAGS, session 21) the partials carry the launch's epoch, half the blocks leave once
// theirs are stored, and the others read them as they land (no fence or arrival count at the end; the rank that picks
// those reducers is taken while the block still computes); with WIDE every block waits for all (one counted arrival
// each) and sums output groups b and b + 128.
template <bool M16, bool WIDE>
__global__ void __launch_bounds__(MLP_THREADS, WIDE ? 1 : 2) mlp_kernel(const MlpParams p) {
  constexpr bool TAGS = !WIDE;
  static_assert(!TAGS || !M16, "tagged partials: the one-prompt kernel (<= 2 rows)");
  constexpr int AST = D + 32;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const int b = blockIdx.x, R = p.g.R, S = p.nst;
  const TlStamp tls(p.g.tl);
#ifdef CF_DIAG_HASH
  __shared__ unsigned hsm[kHashSub];  // stage hashes of the block (zeroed before the prologue's barrier)
  if (tid < kHashSub) hsm[tid] = 0;
#endif
  mlp_phase(p, 0);
  extern __shared__ __align__(16) unsigned char smem[];
  // the head of the layout is the ring lm_head's too (ring_ln_smem); each kernel carves it itself (a shared carving
  // helper moved the ring lm_head from 81 to 82 registers, unmeasured)
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + MLP_MAXSLOTS;
  unsigned char* ring = smem + 2 * MLP_MAXSLOTS * 8;
  bf16* act = reinterpret_cast<bf16*>(ring + (size_t)S * MLP_SLOT);
  float2* st = reinterpret_cast<float2*>(act + (size_t)2 * R * AST);
  float* gu = reinterpret_cast<float*>(st + 16);                // [16][2 HS]
  bf16* hs = reinterpret_cast<bf16*>(gu + 16 * 2 * MLP_HS);      // [R][HST] hi rows, then [R][HST] lo rows
  float* red = reinterpret_cast<float*>(ring);                    // the final reduction, once the ring is drained

  const bool producer = warp == MLP_CW;
  const uint64_t pol = policy_evict_first();
  const int bw = ring_src_block(p.g.wmask, b);  // b, except in the free-weights diagnostic (gpt_device.cuh)
  const bf16* gu_src = p.Wgu + (size_t)bw * (2 * MLP_HS / 8) * (D / 32) * 256;  // 12 groups x 48 chunks x 512 B
  const bf16* dn_src = p.Wdn + mlp_dn_stage(bw, 0);  // stage j at + j MLP_DN_BYTES / 2 elements (mlp_dn_stage)
  // Stage i into its slot: a gate/up stage is 4 chunks of each of the 12 groups (12 copies of 2 KB), a down-proj
  // stage 24 output groups x 3 k16 steps (one copy of 18 KB).
  auto issue = [&](int i, int slot) {  // slot = i % S
    mlp_phase(p, MLP_PH_STAGE + i, MLP_CW * 32);  // the producer's lane 0
    unsigned char* dst = ring + (size_t)slot * MLP_SLOT;
    if (i < MLP_GU_ST) {
      mbar_expect_tx(&full[slot], MLP_SLOT);
#pragma unroll 1
      for (int j = 0; j < MLP_CW; ++j)
        bulk_g2s_hint(dst + j * MLP_GU_CPS * 512, gu_src + ((size_t)j * (D / 32) + i * MLP_GU_CPS) * 256,
                      MLP_GU_CPS * 512, &full[slot], pol);
    } else {
      mbar_expect_tx(&full[slot], MLP_DN_BYTES);
      bulk_g2s_hint(dst, dn_src + (size_t)(i - MLP_GU_ST) * (MLP_DN_BYTES / 2), MLP_DN_BYTES, &full[slot], pol);
    }
  };
  if (producer && lane == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], MLP_CW);
    }
    mbar_fence_init();
    for (int i = 0; i < p.pre; ++i) issue(i, i % S);  // weights only: nothing the predecessor writes
  }
  // biases of this thread's SwiGLU units (e = tid, tid + 384) and of its output column in the final sum, also
  // requested before the wait (weights)
  float gb[2] = {0.f, 0.f}, ub[2] = {0.f, 0.f};
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int e = tid + j * MLP_CW * 32;
    if (!producer && e < R * MLP_HS) {
      const int u = e % MLP_HS, cg = 16 * (u / 8) + u % 8;
      gb[j] = bf(p.bgu[2 * MLP_HS * b + cg]);
      ub[j] = bf(p.bgu[2 * MLP_HS * b + cg + 8]);
    }
  }
  // The final sum (below): with TAGS the last p.nred blocks to take a rank sum the partials and learn which outputs
  // only then, so the down-proj bias (3 KB) goes into L2 now; with WIDE every block sums output groups b and b + 128,
  // whose biases it loads now (weights: before the wait).
  const int RO = R * 8;
  const FastDiv by_r(R), by_ro(RO);  // the reducers' indices (session 31: runtime divisions on the tail's path)
  float bias = 0.f;
  if constexpr (TAGS) {
    if (producer && lane < D * 2 / 128) prefetch_l2(p.bdn + lane * 64);
  } else {
    const int ng = (b + MLP_NB < D / 8) ? 2 : 1;
    if (tid < ng * RO) bias = bf(p.bdn[(b + by_ro.div(tid) * MLP_NB) * 8 + tid % 8]);
  }
  pdl_handoff(tls);
  mlp_phase(p, 1);
  // TAGS: this launch's epoch. Every earlier launch has completed (its arrivals are in the count) and this launch's
  // blocks add at most MLP_NB - 1 before this read, so count / MLP_NB is the number of earlier launches.
  __shared__ unsigned epoch_s;
  __shared__ int arrival_rank;
  unsigned long long count0 = 0;
  if (TAGS && producer && lane == 0) count0 = ld_relaxed_u64(p.ctr);
  // WIDE: 4 items of 8 columns per thread in flight (at 8 rows one L2 round trip instead of four)
  gemv_ln_prologue<D, MLP_CW + 1, (WIDE ? 4 : M16 ? 2 : 1)>(p.g, act, st, R);
  if (TAGS && producer && lane == 0) epoch_s = (unsigned)(count0 / MLP_NB) + 1u;
  __syncthreads();
  unsigned h3 = 0;  // stage hashes (diagnostics, CF_DIAG_HASH; the log's word numbers): 3 the partials written
#ifdef CF_DIAG_HASH
  unsigned h1 = 0, h2 = 0, h5 = 0, h6 = 0, h7 = 0;  // 1 LN input, 2 gate/up outputs, 5-7 ring weights taken
  {  // 1: the LN input rows (hi, lo) and row stats as this block holds them
    const unsigned* a32 = reinterpret_cast<const unsigned*>(act);
    for (int v = tid; v < 2 * R * (AST / 2); v += MLP_THREADS)
      if (v % (AST / 2) < D / 2) hash_add(h1, a32[v], v + (b << 16));
    if (tid < R)
      hash_add(h1, __float_as_uint(st[tid].x) ^ (__float_as_uint(st[tid].y) * 3u), (1u << 30) + tid + (b << 8));
  }
#endif
  mlp_phase(p, 2);

  if (producer) {
    if (lane == 0) ring_fill(empty, S, p.pre, MLP_NST, issue);
    // TAGS: the arrival rank, taken once every stage is requested (~nst stages before this block's end, so the round
    // trip is off its path); the last p.nred blocks to take one sum the partials
    mlp_phase(p, 6, MLP_CW * 32);
    if (TAGS && lane == 0) arrival_rank = (int)(atomicAdd(p.ctr, 1ull) % MLP_NB);
    __syncwarp();
  } else {
    const bool split = p.g.split != 0;
    // ---- gate/up: this warp's 8 rows (interleaved rows 96 b + 8 warp ..) over the whole K --------------------
    float acc[4] = {0.f, 0.f, 0.f, 0.f}, acc2[4] = {0.f, 0.f, 0.f, 0.f};
    RingPos rp;  // the ring position of stage i, through both loops
#pragma unroll 1
    for (int i = 0; i < MLP_GU_ST; ++i) {
      uint4 wb[MLP_GU_CPS];
      ring_take(full, empty, ring, MLP_SLOT, rp, S, (size_t)warp * MLP_GU_CPS * 512, wb);
      mlp_phase(p, MLP_PH_STAGE + MLP_NST + i);
#ifdef CF_DIAG_HASH
#pragma unroll
      for (int c = 0; c < MLP_GU_CPS; ++c)
        (i < S ? h5 : h6) ^= (wb[c].x ^ wb[c].y ^ wb[c].z ^ wb[c].w) * (2u * (i * MLP_GU_CPS + c) + 1u);
#endif
#pragma unroll
      for (int c = 0; c < MLP_GU_CPS; ++c) {
        const int k = (i * MLP_GU_CPS + c) * 32 + t4 * 8;
        if constexpr (M16) {
          uint4 a0, a1, l0, l1;
          gemv_load_act<D, true>(p.g, act, true, R, g, k, split, a0, a1, l0, l1);
          mma_chunk(acc, a0, a1, wb[c]);
          if (split) mma_chunk(acc2, l0, l1, wb[c]);
        } else {
          uint4 a0, a1;
          gemv_act8<D>(p.g, act, true, R, g, k, split, a0, a1);
          mma_chunk(acc, a0, a1, wb[c]);
        }
      }
    }
    mlp_phase(p, 3);
    {
      float* o = gu + warp * 8 + 2 * t4;
      if constexpr (M16) {
        if (g < R) {
          o[g * 2 * MLP_HS] = acc[0] + acc2[0];
          o[g * 2 * MLP_HS + 1] = acc[1] + acc2[1];
        }
        if (g + 8 < R) {
          o[(g + 8) * 2 * MLP_HS] = acc[2] + acc2[2];
          o[(g + 8) * 2 * MLP_HS + 1] = acc[3] + acc2[3];
        }
      } else if (g < R) {
        o[g * 2 * MLP_HS] = acc[0] + acc[2];
        o[g * 2 * MLP_HS + 1] = acc[1] + acc[3];
      }
    }
    mlp_consumer_sync();
#ifdef CF_DIAG_HASH
    for (int e = tid; e < R * 2 * MLP_HS; e += MLP_CW * 32) hash_addf(h2, gu[e], e + (b << 16));  // 2: gate/up
#endif
    // ---- SwiGLU of the block's 48 hidden units (gate group 2m, up group 2m + 1), split into bf16 hi + lo -----
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = tid + j * MLP_CW * 32;
      if (e >= R * MLP_HS) break;
      const int r = e / MLP_HS, u = e % MLP_HS, cg = 16 * (u / 8) + u % 8, cu = cg + 8;
      const float gv = gu[r * 2 * MLP_HS + cg] + gb[j];
      const float uv = gu[r * 2 * MLP_HS + cu] + ub[j];
      const float sg = gv / (1.f + __expf(-gv));
      const float hv = sg * uv;
      const bf16 hh = __float2bfloat16_rn(hv);
      hs[r * MLP_HST + u] = hh;
      hs[(R + r) * MLP_HST + u] = __float2bfloat16_rn(hv - __bfloat162float(hh));
    }
    mlp_consumer_sync();
    mlp_phase(p, 4);
    // ---- down-proj partials over the block's 48 columns: A fragments once, then 2 output groups per stage -----
    // k16 step t, lane (g, t4): columns 16 t + 4 t4 .. + 3 of the weights' row g and of the activation row, the same
    // permutation of the MMA's k slots for both (as the 32-column chunks of the other GEMVs).
    uint2 ah[MLP_KS], al[MLP_KS], ah8[MLP_KS], al8[MLP_KS];
#pragma unroll
    for (int t = 0; t < MLP_KS; ++t) {
      const int k = 16 * t + 4 * t4;
      const uint2 z = make_uint2(0, 0);
      ah[t] = g < R ? *reinterpret_cast<const uint2*>(hs + g * MLP_HST + k) : z;
      al[t] = (split && g < R) ? *reinterpret_cast<const uint2*>(hs + (R + g) * MLP_HST + k) : z;
      ah8[t] = (M16 && g + 8 < R) ? *reinterpret_cast<const uint2*>(hs + (g + 8) * MLP_HST + k) : z;
      al8[t] = (M16 && split && g + 8 < R) ? *reinterpret_cast<const uint2*>(hs + (R + g + 8) * MLP_HST + k) : z;
    }
#pragma unroll 1
    for (int i = MLP_GU_ST; i < MLP_NST; ++i) {
      const int slot = rp.slot;
      mbar_wait(&full[slot], rp.phase);
      mlp_phase(p, MLP_PH_STAGE + MLP_NST + i);
      const uint2* ws = reinterpret_cast<const uint2*>(ring + (size_t)slot * MLP_SLOT);
      uint2 wb[2][MLP_KS];
#pragma unroll
      for (int q = 0; q < 2; ++q)
#pragma unroll
        for (int t = 0; t < MLP_KS; ++t) wb[q][t] = ws[((2 * warp + q) * MLP_KS + t) * 32 + lane];
#ifdef CF_DIAG_HASH
#pragma unroll
      for (int q = 0; q < 2; ++q)
#pragma unroll
        for (int t = 0; t < MLP_KS; ++t) h7 ^= (wb[q][t].x ^ wb[q][t].y) * (2u * ((i * 2 + q) * MLP_KS + t) + 1u);
#endif
      ring_release(&empty[slot]);
      rp.next(S);
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        float a[4] = {0.f, 0.f, 0.f, 0.f}, a2[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int t = 0; t < MLP_KS; ++t) {
          if constexpr (M16) {
            mma_bf16_16816(a, ah[t].x, ah8[t].x, ah[t].y, ah8[t].y, wb[q][t].x, wb[q][t].y);
            if (split) mma_bf16_16816(a2, al[t].x, al8[t].x, al[t].y, al8[t].y, wb[q][t].x, wb[q][t].y);
          } else {
            mma_bf16_16816(a, ah[t].x, al[t].x, ah[t].y, al[t].y, wb[q][t].x, wb[q][t].y);
          }
        }
        const int n8 = (i - MLP_GU_ST) * MLP_DN_GPS + 2 * warp + q;
        if constexpr (TAGS) {
          if (g < R) {
            st_relaxed_v2_u64(p.tagged + mlp_tag_off(n8, b, g, 2 * t4),
                              tag_pack(a[0] + a[2], epoch_s), tag_pack(a[1] + a[3], epoch_s));
            hash_addf(h3, a[0] + a[2], (unsigned)mlp_tag_off(n8, b, g, 2 * t4));
            hash_addf(h3, a[1] + a[3], (unsigned)mlp_tag_off(n8, b, g, 2 * t4) + 1u);
          }
        } else {
          float* dst = p.part + ((size_t)n8 * MLP_NB + b) * R * 8 + 2 * t4;
          if constexpr (M16) {
            if (g < R) *reinterpret_cast<float2*>(dst + g * 8) = make_float2(a[0] + a2[0], a[1] + a2[1]);
            if (g + 8 < R) *reinterpret_cast<float2*>(dst + (g + 8) * 8) = make_float2(a[2] + a2[2], a[3] + a2[3]);
          } else if (g < R) {
            *reinterpret_cast<float2*>(dst + g * 8) = make_float2(a[0] + a[2], a[1] + a[3]);
          }
        }
      }
    }
    mlp_phase(p, 5);
  }
#ifdef CF_DIAG_HASH
  hash_to_block(hsm, 1, h1);
  hash_to_block(hsm, 2, h2);
  hash_to_block(hsm, 3, h3);
  {  // 5 / 6 / 7: the weights this block took from its ring (the same in every step): gate/up stages before the
     // wait / the other gate/up stages / the down-proj
    unsigned w5 = 0, w6 = 0, w7 = 0;
    hash_add(w5, h5, tid + (b << 10));
    hash_add(w6, h6, tid + (b << 10));
    hash_add(w7, h7, tid + (b << 10));
    hash_to_block(hsm, 5, w5);
    hash_to_block(hsm, 6, w6);
    hash_to_block(hsm, 7, w7);
  }
#endif
  __syncthreads();
#ifdef CF_DIAG_HASH
  hash_block_flush(p.g.hl, hsm, 1, 8);
#endif
  mlp_phase(p, 7);
  if (tid == 0) mlp_stamp(p, MLP_PH_RANK, TAGS ? arrival_rank : 0);
#ifdef CF_DIAG_PHASES
  if (tid == 0) mlp_stamp(p, MLP_PH_SM, smid());
#endif

  // ---- every block's partials written. TAGS: the first MLP_NB - nred blocks to take a rank leave at once, so their
  // SMs take the next kernel's blocks one by one instead of all at the end (session 17: -1.5..-2% TPOT at one
  // prompt; slower at 8 rows), and the reducers poll the tagged partials (session 21: -0.3% / -1.1%). WIDE: one
  // counted arrival per block, and every block waits for all. Reducer j owns output groups j, j + nred, ...; each
  // output's sum has the same order whichever block computes it, so the outputs do not depend on nred.
  if (TAGS) {
    if (arrival_rank < MLP_NB - p.nred) return;
  } else if (tid == 0) {
    arrival_release();
    const unsigned long long old = atomicAdd(p.ctr, 1ull);
    const unsigned long long target = (old / MLP_NB + 1) * MLP_NB;
    arrival_rank = (int)(old % MLP_NB);
    unsigned long long n = 0;
    while (ld_acquire_u64(p.ctr) < target)
      if (++n > p.spin_limit) __trap();
    arrival_acquire();
  }
  // WIDE: the rank store above and the j < 0 test below are dead, but without them ptxas gives 116 registers, not 106
  __syncthreads();
  const int nred = TAGS ? p.nred : MLP_NB;
  const int j = TAGS ? arrival_rank - (MLP_NB - nred) : b;
  if (j < 0) return;
  const int ng = mlp_reducer_groups(j, nred);  // output groups of this reducer (ng * RO <= MLP_THREADS)

  // ---- its output groups: the 128 partials per output in 8 interleaved subsets, then the subsets in order (the
  // same order for every row count), + bias + residual (+ add2), then the groups' LN stats ----------------------
  float xr = 0.f, a2r = 0.f;
  if (tid < ng * RO) {
    const int col = (j + by_ro.div(tid) * nred) * 8 + tid % 8, r = by_ro.mod(tid) / 8;
    xr = __ldcg(p.g.resid + (size_t)r * D + col);
    if (p.g.add2) a2r = __ldcg(p.g.add2 + (size_t)r * D + col);
    if constexpr (TAGS) bias = bf(p.bdn[col]);
  }
  // (gi, subset, output) items, up to MLP_RK per thread with all their loads in flight before the sums (8 rows:
  // 1024 items on 416 threads, one L2 round trip instead of three)
  constexpr int PER = MLP_NB / MLP_SUBSETS, MLP_RK = WIDE ? 3 : 1;
  const int nit = ng * MLP_SUBSETS * RO;
  for (int e0 = tid; e0 < nit; e0 += MLP_RK * MLP_THREADS) {
    float v[MLP_RK][PER];
#pragma unroll
    for (int k = 0; k < MLP_RK; ++k) {
      const int e = e0 + k * MLP_THREADS;
      if (e >= nit) break;
      const int q = by_ro.div(e), gi = q / MLP_SUBSETS, s = q % MLP_SUBSETS, o = e - q * RO;
      if constexpr (TAGS) {
        // the 16 partials as they land (each with this launch's epoch)
        tag_wait<PER>(p.tagged + mlp_tag_off(j + gi * nred, s, 0, o), MLP_TAG_BSTEP, (1u << PER) - 1u, epoch_s, v[k],
                      p.spin_limit);
      } else {
        const float* src = p.part + (size_t)(j + gi * nred) * MLP_NB * RO + o;
#pragma unroll
        for (int i = 0; i < PER; ++i) v[k][i] = __ldcg(src + (size_t)(s + MLP_SUBSETS * i) * RO);
      }
    }
#pragma unroll
    for (int k = 0; k < MLP_RK; ++k) {
      const int e = e0 + k * MLP_THREADS;
      if (e >= nit) break;
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < PER; ++i) sum += v[k][i];
      red[e] = sum;
    }
  }
  __syncthreads();
  mlp_phase(p, 8);
  float* xs = red + nit;  // [ng][R][8] new residual values
  if (tid < ng * RO) {
    const int gi = by_ro.div(tid), o = tid - gi * RO, r = o / 8, col = (j + gi * nred) * 8 + o % 8;
    float y = 0.f;
#pragma unroll
    for (int s = 0; s < MLP_SUBSETS; ++s) y += red[(gi * MLP_SUBSETS + s) * RO + o];
    y = y + bias;
    float x = xr + y;
    if (p.g.add2) x = x + a2r;
    p.g.resid[(size_t)r * D + col] = x;
    if (p.g.save_y) p.g.save_y[(size_t)r * D + col] = y;
    xs[tid] = x;
    unsigned hh = 0;  // output hash (diagnostics, CF_DIAG_HASH)
    hash_addf(hh, x, r * D + col);
    hash_flush(p.g.hl, hh);
  }
  __syncthreads();
  if (tid < ng * R) {
    const int gi = by_r.div(tid), r = tid - gi * R;
    reinterpret_cast<float2*>(p.g.stats_out)[(size_t)r * NSLOT + j + gi * nred] = ln_stats8(xs + gi * RO + r * 8);
  }
  mlp_phase(p, 9);
}

}  // namespace cubeforge::cuda::detail
