// Kernels of the CUDA GPT engine (decode step and cond-stream prefill). See docs/cuda-gpt.md for the design.
// Widths are fixed to the Cube 3D GPT (D 1536, 12 heads of 128, MLP 6144); the engine checks the config.
#pragma once
#include "cuda_common.cuh"

namespace cubeforge::cuda::detail {

constexpr int D = 1536, H = 12, HD = 128, F = 6144, NSLOT = D / 8, QKV_LD = 3 * D;
constexpr int ACH = 32;            // keys per attention split block
constexpr int AKPW = ACH / 4;      // keys per warp (4 warps)
constexpr int MAXP = 8;            // variations (prompts) per batch
constexpr int MAXR = 2 * MAXP;     // rows

// Written by the host before a generate / teacher-forced step (never by kernels).
struct Ctl {
  int P;              // variations
  int cfg;            // 1: rows = 2P (cond rows then uncond rows)
  int N;              // tokens per object
  int vocab;          // sampled range [0, vocab)
  int forced;         // teacher forcing: feed forced_tok instead of the chosen token
  int write_guided;   // lm_head writes the guided logits (top-p needs them)
  int write_raw;      // lm_head writes the raw bf16 logits
  int pad0;
  double guidance;
  float top_p;
  float pad1;
  unsigned long long seed;
  int forced_tok[MAXP];
};
// Written by kernels: the position (decode step index) and the last-block counters.
struct Dyn {
  int pos;
  unsigned cnt_lm;
  unsigned cnt_topp;
  unsigned pad;
};

enum Epi { EPI_QKV = 0, EPI_RESID = 1, EPI_SWIGLU = 2, EPI_LMHEAD = 3 };

// ---- weight loads -------------------------------------------------------------------------------------------------
// Weight load with an L2 cache policy (createpolicy): evict_first, the weights are dead once read in a step.
__device__ __forceinline__ uint4 ld_weight_hint(const void* p, uint64_t pol) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p), "l"(pol));
  return r;
}
__device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t pol = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#endif
  return pol;
}

// ---- bulk copies (the copy engine, no registers) completing on shared-memory mbarriers ---------------------------
// Used by the one-round GEMVs' shared-memory weight items and the fused step's ring (gpt_step_kernel.cuh).
__device__ __forceinline__ uint32_t smem_u32(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
// Global -> shared bulk copy (bytes % 16 == 0, both addresses 16-byte aligned), completing on an mbarrier.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}
// The same with an L2 cache policy (createpolicy), e.g. evict_first for weights read once per step.
__device__ __forceinline__ void bulk_g2s_hint(void* dst, const void* src, unsigned bytes, uint64_t* bar, uint64_t pol) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar)), "l"(pol)
      : "memory");
}

// ---- timeline diagnostics (EngineOptions::variant bit 21) ---------------------------------------------------------
// Per kernel three %globaltimer stamps (ns), all kept by atomicMin: the earliest block start, the earliest return
// from griddepcontrol.wait (= when the predecessor's results became visible) and the latest block end (stored as ~t).
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
struct TlStamp {
  unsigned long long* t;
  __device__ explicit TlStamp(unsigned long long* tl) : t(tl) {
    if (t && threadIdx.x == 0) atomicMin(t, gtimer());
  }
  __device__ void waited() const {
    if (t && threadIdx.x == 0) atomicMin(t + 1, gtimer());
  }
  __device__ ~TlStamp() {
    if (t && threadIdx.x == 0) atomicMin(t + 2, ~gtimer());
  }
};

// A decode kernel's handoff point: everything before it may only read what was written at least two kernels back
// (weights, earlier KV slots); it waits for the predecessor's results, stamps the timeline and lets the successor
// launch (its blocks start as soon as resources free up and request their own weights).
__device__ __forceinline__ void pdl_handoff(const TlStamp& tls) {
  pdl_wait();
  tls.waited();
  pdl_trigger();
}

struct GemvParams {
  const bf16* W;       // [N][K] blocked (default) or row-major (see gemv_w_off)
  int N;
  int blocked;
  int R;               // rows (<= 16)
  const bf16* A;       // non-LN input [R][K]: bf16 high part of the fp32 activation
  const bf16* A_lo;    // non-LN input [R][K]: bf16 low part (activation - high), used when split
  int split;           // 1: activation = hi + lo (two bf16 parts, ~16 mantissa bits); 0: hi only (bf16 operand)
  const float* X;      // LN input [R][D] fp32
  const float* stats;  // LN input partial stats [R][NSLOT] (sum, sumsq) over 8 columns each
  float eps;
  const bf16* bias;    // bias per output column (EPI_QKV: for columns >= bias_from)
  int bias_from;
  float* out_f;        // EPI_QKV output (fp32)
  bf16* out;           // EPI_SWIGLU output: hi part
  bf16* out_lo;        // EPI_SWIGLU output: lo part
  int ld_out;
  float* resid;        // EPI_RESID: residual stream x [R][D] (x += y)
  float* stats_out;    // EPI_RESID: partial stats of the new x
  const float* add2;   // EPI_RESID: optional second residual add (single-block constant, fp32)
  float* save_y;       // EPI_RESID: optional copy of y (fp32)
  float* ks_scratch;   // KSPLIT > 1: partial tiles
  unsigned* ks_cnt;    // KSPLIT > 1: per-tile arrival counters (left at 0)
  // EPI_LMHEAD
  const Ctl* ctl;
  Dyn* dyn;
  float* guided;       // [P][vocab]
  float* raw;          // [R][vocab]
  float* lm_val;       // [P][gridDim.x] block argmax partials
  int* lm_idx;
  int tail;            // 1: last block picks the token (argmax / forced) and emits it
  const float* wte;    // [V][D] fp32
  float* x_next;       // residual stream to (re)initialise with the next embedding
  float* stats_next;
  int* tokens;         // device [P][N]
  int* host_tokens;    // mapped pinned [P][N]
  int act_smem;        // non-LN input staged in shared memory (else read from L2 per chunk)
  unsigned long long wmask;  // diagnostics only (timing): weight element offsets & wmask (0: off)
  unsigned long long* tl;    // diagnostics only: this kernel's timeline stamps (TlStamp) or null
};

// ---- token emission: next embedding (both CFG rows), its LN stats, token outputs ------------------------------
__device__ inline void emit_tokens(const int* tok, int p_begin, int p_end, const Ctl* ctl, int pos, const float* wte,
                                   float* x, float* stats, int* tokens, int* host_tokens, int nthr) {
  const int P = ctl->P, cfg = ctl->cfg;
  const int np = p_end - p_begin;
  for (int v = threadIdx.x; v < np * (D / 4); v += nthr) {
    const int p = p_begin + v / (D / 4), k4 = (v % (D / 4)) * 4;
    const float4 e = *reinterpret_cast<const float4*>(wte + (size_t)tok[p] * D + k4);
    *reinterpret_cast<float4*>(x + (size_t)p * D + k4) = e;
    if (cfg) *reinterpret_cast<float4*>(x + (size_t)(P + p) * D + k4) = e;
  }
  for (int v = threadIdx.x; v < np * NSLOT; v += nthr) {
    const int p = p_begin + v / NSLOT, sl = v % NSLOT;
    const float* e = wte + (size_t)tok[p] * D + sl * 8;
    float s = 0.f, q = 0.f;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      s += e[c];
      q += e[c] * e[c];
    }
    reinterpret_cast<float2*>(stats)[(size_t)p * NSLOT + sl] = make_float2(s, q);
    if (cfg) reinterpret_cast<float2*>(stats)[(size_t)(P + p) * NSLOT + sl] = make_float2(s, q);
  }
  if ((int)threadIdx.x < np) {
    const int p = p_begin + threadIdx.x;
    tokens[p * ctl->N + pos] = tok[p];
    if (host_tokens) reinterpret_cast<volatile int*>(host_tokens)[p * ctl->N + pos] = tok[p];
  }
}

// fp32 activation -> bf16 hi + bf16 lo (v - hi, rounded): hi + lo carries ~16 mantissa bits, so a GEMV that runs
// its MMA on both parts sees the fp32 activation up to ~2^-17 relative instead of bf16's 2^-9.
__device__ __forceinline__ void split_store(bf16* hi, bf16* lo, size_t i, float v) {
  const bf16 h = __float2bfloat16_rn(v);
  hi[i] = h;
  lo[i] = __float2bfloat16_rn(v - __bfloat162float(h));
}

// Cross-block arrival (one thread, after a block barrier that orders the block's partial writes before its fence,
// which is cumulative): makes the block's writes visible to the block that arrives last, adds 1 to *cnt and returns
// the old count. arrival_acquire(): the last arriver's view of every other block's writes (then a block barrier
// before the other threads read them). Session 10 measured fence.acq_rel.gpu and atom.add.acq_rel.gpu in place of
// membar.gl + a relaxed atomic: TPOT equal within 0.1% (docs/cuda-gpt-notes.md).
__device__ __forceinline__ void arrival_release() { __threadfence(); }
__device__ __forceinline__ void arrival_acquire() { __threadfence(); }
__device__ __forceinline__ unsigned arrive(unsigned* cnt) {
  arrival_release();
  return atomicAdd(cnt, 1u);
}

// The argmax rule of the lm_head tails: (v, i) replaces (bv, bi) if larger, or equal with a smaller index.
__device__ __forceinline__ void argmax_take(float v, int i, float& bv, int& bi) {
  if (v > bv || (v == bv && i < bi)) {
    bv = v;
    bi = i;
  }
}

// Index of the best of n argmax partials (values vals[0..n), indices idx[0..n), written by other blocks: read from
// L2) by one warp: the larger value, then the smaller index. Every lane returns it.
__device__ __forceinline__ int warp_argmax_partials(const float* vals, const int* idx, int n) {
  float best = -INFINITY;
  int bi = 0x7fffffff;
  for (int b = threadIdx.x & 31; b < n; b += 32) argmax_take(__ldcg(vals + b), __ldcg(idx + b), best, bi);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    argmax_take(__shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, bi, o), best, bi);
  return bi;
}

// GEMV epilogues on the reduced tile outs[16][NT] (rows x outputs n0..n0+NT-1), run by the NW * 32 compute threads.
template <int NTILE, int NW, int EPI>
// have_pre: EPI_RESID's residual (and add2) element of this thread (e = threadIdx.x, R * NT <= threads) was read
// before the MMA loop into xpre / apre (same values; one L2 round trip less after the reduction).
__device__ __forceinline__ void gemv_epilogue(const GemvParams& p, float* outs, int* flag, int n0, int tile,
                                              int total, float xpre = 0.f, float apre = 0.f, bool have_pre = false) {
  constexpr int NT = 8 * NTILE;
  const int R = p.R;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // ---- epilogues ----
  if constexpr (EPI == EPI_QKV) {
    for (int e = threadIdx.x; e < R * NT; e += NW * 32) {
      const int r = e / NT, c = e % NT, col = n0 + c;
      if (col >= p.N) continue;
      float v = outs[r * NT + c];
      if (col >= p.bias_from) v += bf(p.bias[col - p.bias_from]);
      p.out_f[(size_t)r * p.ld_out + col] = v;
    }
  } else if constexpr (EPI == EPI_RESID) {
    for (int e = threadIdx.x; e < R * NT; e += NW * 32) {
      const int r = e / NT, c = e % NT, col = n0 + c;
      const float y = outs[r * NT + c] + bf(p.bias[col]);
      float x = have_pre ? xpre : __ldcg(p.resid + (size_t)r * D + col);
      x = x + y;
      if (p.add2) x = x + (have_pre ? apre : __ldcg(p.add2 + (size_t)r * D + col));
      p.resid[(size_t)r * D + col] = x;
      if (p.save_y) p.save_y[(size_t)r * D + col] = y;
      outs[r * NT + c] = x;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < R * NTILE; e += NW * 32) {
      const int r = e / NTILE, tt = e % NTILE;
      float s = 0.f, q = 0.f;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const float x = outs[r * NT + tt * 8 + c];
        s += x;
        q += x * x;
      }
      reinterpret_cast<float2*>(p.stats_out)[(size_t)r * NSLOT + n0 / 8 + tt] = make_float2(s, q);
    }
  } else if constexpr (EPI == EPI_SWIGLU) {
    constexpr int NF = NT / 2;
    for (int e = threadIdx.x; e < R * NF; e += NW * 32) {
      const int r = e / NF, j = e % NF, m = j / 8, cc = j % 8;
      const int cg = 2 * m * 8 + cc, cu = (2 * m + 1) * 8 + cc;
      const float gv = outs[r * NT + cg] + bf(p.bias[n0 + cg]);
      const float uv = outs[r * NT + cu] + bf(p.bias[n0 + cu]);
      const float sg = gv / (1.f + __expf(-gv));
      split_store(p.out, p.out_lo, (size_t)r * p.ld_out + n0 / 2 + j, sg * uv);
    }
  } else if constexpr (EPI == EPI_LMHEAD) {
    const Ctl* ctl = p.ctl;
    const int P = ctl->P, cfg = ctl->cfg, V = ctl->vocab;
    const int pos = __ldcg(&p.dyn->pos);
    const double gd = ctl->guidance * (double)(ctl->N - pos) / (double)ctl->N;
    const float g1 = (float)(1.0 + gd), gm = (float)gd;
    if (ctl->write_raw)
      for (int e = threadIdx.x; e < R * NT; e += NW * 32) {
        const int r = e / NT, c = e % NT, col = n0 + c;
        if (col < V) p.raw[(size_t)r * V + col] = outs[r * NT + c];
      }
    __syncthreads();
    for (int e = threadIdx.x; e < P * NT; e += NW * 32) {
      const int pp = e / NT, c = e % NT, col = n0 + c;
      const float lc = outs[pp * NT + c];
      float gv = lc;
      if (cfg) {
        const float lu = outs[(P + pp) * NT + c];
        gv = __fsub_rn(__fmul_rn(g1, lc), __fmul_rn(gm, lu));
      }
      if (col >= V) gv = -INFINITY;
      outs[pp * NT + c] = gv;
      if (ctl->write_guided && col < V) p.guided[(size_t)pp * V + col] = gv;
    }
    __syncthreads();
    // Session 6: a block keeps a running argmax over its tiles (tile, tile + gridDim.x, ...: increasing columns) in
    // shared memory (flag[16..23] values, flag[24..31] indices, owned by thread pp) and publishes one partial per
    // block after its last tile, so the fence + atomic + tail barriers run once per block instead of once per
    // tile. Combined with the same rule as the tail (larger value, then smaller index), so the token is the same.
    const int nparts = gridDim.x;
    const bool publish = tile + (int)gridDim.x >= total;  // block-uniform
    if ((int)threadIdx.x < P) {
      const int pp = threadIdx.x;
      float best = outs[pp * NT];
      int bi = n0;
      for (int c = 1; c < NT; ++c)
        if (outs[pp * NT + c] > best) {
          best = outs[pp * NT + c];
          bi = n0 + c;
        }
      float* rv = reinterpret_cast<float*>(flag + 16);
      int* ri = flag + 24;
      if (tile != (int)blockIdx.x) {  // not this block's first tile: combine with its earlier tiles
        const float v0 = rv[pp];
        const int i0 = ri[pp];
        if (!(best > v0 || (best == v0 && bi < i0))) {
          best = v0;
          bi = i0;
        }
      }
      rv[pp] = best;
      ri[pp] = bi;
      if (publish) {
        p.lm_val[pp * nparts + blockIdx.x] = best;
        p.lm_idx[pp * nparts + blockIdx.x] = bi;
      }
    }
    if (p.tail && publish) {
      // One fence by one thread after the barrier (the cooperative-groups grid-sync pattern: the barrier orders the
      // block's partial writes before thread 0's fence, which is cumulative), instead of a fence in every thread.
      __syncthreads();
      if (threadIdx.x == 0) {
        const bool last = arrive(&p.dyn->cnt_lm) == (unsigned)nparts - 1;
        if (last) arrival_acquire();
        *flag = last;
      }
      __syncthreads();
      if (*flag) {  // every tile has published its partial: pick, emit, advance the position
        int* tok = flag + 1;
        if (warp < P) {
          const int bi = warp_argmax_partials(p.lm_val + warp * nparts, p.lm_idx + warp * nparts, nparts);
          if (lane == 0) tok[warp] = ctl->forced ? ctl->forced_tok[warp] : bi;
        }
        __syncthreads();
        emit_tokens(tok, 0, P, ctl, pos, p.wte, p.x_next, p.stats_next, p.tokens, p.host_tokens, NW * 32);
        __syncthreads();
        if (threadIdx.x == 0) {
          p.dyn->cnt_lm = 0;
          p.dyn->pos = pos + 1;
        }
      }
    }
  }
}

// LN prologue of a GEMV: per-row mean / rstd from the producer's per-8-column partial sums (fp64), then the
// normalised rows of X as bf16 hi rows [R][AST] followed by lo rows [R][AST] in shared memory (act).
// Session 6: every thread requests its first G items of X (8 columns each) before the row statistics and the
// rest G at a time, so the stats and X round trips to L2 overlap and the X loads are batched.
template <int K, int NW, int G>
__device__ __forceinline__ void gemv_ln_prologue(const GemvParams& p, bf16* act, float2* st, int R) {
  constexpr int AST = K + 32, NTHR = NW * 32, K8 = K / 8;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n = R * K8;
  float4 xa[G], xb[G];
  auto issue = [&](int base) {
#pragma unroll
    for (int i = 0; i < G; ++i) {
      const int v = base + i * NTHR;
      xa[i] = xb[i] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (v < n) {
        const int r = v / K8, k8 = (v % K8) * 8;
        xa[i] = ld_cg_f4(p.X + (size_t)r * D + k8);
        xb[i] = ld_cg_f4(p.X + (size_t)r * D + k8 + 4);
      }
    }
  };
  auto put = [&](int v, const float4& a, const float4& b) {
    const int r = v / K8, k8 = (v % K8) * 8;
    const float2 m = st[r];
    const float y[8] = {(a.x - m.x) * m.y, (a.y - m.x) * m.y, (a.z - m.x) * m.y, (a.w - m.x) * m.y,
                        (b.x - m.x) * m.y, (b.y - m.x) * m.y, (b.z - m.x) * m.y, (b.w - m.x) * m.y};
    uint4 o, ol;
    o.x = pack_bf2(y[0], y[1]);
    o.y = pack_bf2(y[2], y[3]);
    o.z = pack_bf2(y[4], y[5]);
    o.w = pack_bf2(y[6], y[7]);
    ol.x = pack_bf2(y[0] - bf_lo(o.x), y[1] - bf_hi(o.x));
    ol.y = pack_bf2(y[2] - bf_lo(o.y), y[3] - bf_hi(o.y));
    ol.z = pack_bf2(y[4] - bf_lo(o.z), y[5] - bf_hi(o.z));
    ol.w = pack_bf2(y[6] - bf_lo(o.w), y[7] - bf_hi(o.w));
    *reinterpret_cast<uint4*>(act + (size_t)r * AST + k8) = o;
    *reinterpret_cast<uint4*>(act + (size_t)(R + r) * AST + k8) = ol;
  };
  issue(threadIdx.x);
  for (int r = warp; r < R; r += NW) {
    double s = 0.0, q = 0.0;
    for (int j = lane; j < NSLOT; j += 32) {
      const float2 v = __ldcg(reinterpret_cast<const float2*>(p.stats) + r * NSLOT + j);
      s += v.x;
      q += v.y;
    }
    s = warp_sum_d(s);
    q = warp_sum_d(q);
    if (lane == 0) {
      const double mean = s / D;
      double var = q / D - mean * mean;
      if (var < 0.0) var = 0.0;
      st[r] = make_float2((float)mean, (float)(1.0 / sqrt(var + (double)p.eps)));
    }
  }
  __syncthreads();
  for (int base = threadIdx.x; base < n; base += G * NTHR) {
    if (base != (int)threadIdx.x) issue(base);
#pragma unroll
    for (int i = 0; i < G; ++i)
      if (base + i * NTHR < n) put(base + i * NTHR, xa[i], xb[i]);
  }
}

// End of a GEMV tile: hi + lo partial sums combined, then the cross-warp reduction (fixed order: deterministic)
// into outs[16][NT] (row, output) through red.
template <int NTILE, int NW, bool M16>
__device__ __forceinline__ void gemv_reduce(float (&acc)[NTILE][4], const float (&acc2)[NTILE][4], bool split,
                                            float* red, float* outs) {
  constexpr int NT = 8 * NTILE;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (split) {
#pragma unroll
    for (int tt = 0; tt < NTILE; ++tt) {
      if constexpr (M16) {
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[tt][i] += acc2[tt][i];
      } else {
        acc[tt][0] += acc[tt][2];
        acc[tt][1] += acc[tt][3];
        acc[tt][2] = acc[tt][3] = 0.f;
      }
    }
  }
  // cross-warp reduction (fixed order: deterministic)
#pragma unroll
  for (int tt = 0; tt < NTILE; ++tt)
#pragma unroll
    for (int i = 0; i < 4; ++i) red[((warp * NTILE + tt) * 4 + i) * 32 + lane] = acc[tt][i];
  __syncthreads();
  for (int e = threadIdx.x; e < NTILE * 128; e += NW * 32) {
    const int tt = e >> 7, i = (e >> 5) & 3, l = e & 31;
    float s = 0.f;
#pragma unroll
    for (int ww = 0; ww < NW; ++ww) s += red[((ww * NTILE + tt) * 4 + i) * 32 + l];
    const int row = (l >> 2) + ((i & 2) ? 8 : 0), col = tt * 8 + (l & 3) * 2 + (i & 1);
    outs[row * NT + col] = s;
  }
  __syncthreads();
}

// Non-LN GEMV input (bf16 hi [R][K] + lo [R][K] in global memory, written by the previous kernel) copied to the
// shared-memory rows [R][K + 32] (hi) + [R][K + 32] (lo) that gemv_load_act reads, columns [k0, k1) only. Loads
// are issued in batches of 4 per thread before their stores, so a thread waits ~one L2 round trip per batch
// instead of every chunk of the MMA loop waiting on its own L2 load.
template <int K, int NTHR>
__device__ __forceinline__ void gemv_stage_act(const GemvParams& p, bf16* act, int R, int k0, int k1) {
  constexpr int AST = K + 32;
  const int w8 = (k1 - k0) / 8, n = R * w8;
  const bool split = p.split != 0;
  for (int base = threadIdx.x; base < n; base += 4 * NTHR) {
    uint4 h[4], l[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int v = base + i * NTHR;
      h[i] = l[i] = make_uint4(0, 0, 0, 0);
      if (v < n) {
        const int r = v / w8, k = k0 + (v % w8) * 8;
        h[i] = ld_cg16(p.A + (size_t)r * K + k);
        if (split) l[i] = ld_cg16(p.A_lo + (size_t)r * K + k);
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int v = base + i * NTHR;
      if (v < n) {
        const int r = v / w8, k = k0 + (v % w8) * 8;
        *reinterpret_cast<uint4*>(act + (size_t)r * AST + k) = h[i];
        if (split) *reinterpret_cast<uint4*>(act + (size_t)(R + r) * AST + k) = l[i];
      }
    }
  }
}

// A GEMV's input in shared memory (hi rows [R][K + 32], then lo rows), followed by a block barrier: the LN prologue
// of the residual stream (LN GEMVs) or the staged non-LN input, columns [k0, k1) (p.act_smem), or nothing. Returns
// the byte offset where the GEMV's other shared arrays start.
template <int K, int NW, bool LN, int G>
__device__ __forceinline__ size_t gemv_stage_input(const GemvParams& p, unsigned char* smem, int R, int k0, int k1) {
  constexpr int AST = K + 32;
  size_t off = 0;
  if constexpr (LN) {
    off = ((size_t)2 * R * AST * 2 + 15) & ~size_t(15);
    float2* st = reinterpret_cast<float2*>(smem + off);
    off += 16 * sizeof(float2);
    gemv_ln_prologue<K, NW, G>(p, reinterpret_cast<bf16*>(smem), st, R);
    __syncthreads();
  } else if (p.act_smem) {
    off = ((size_t)2 * R * AST * 2 + 15) & ~size_t(15);
    gemv_stage_act<K, NW * 32>(p, reinterpret_cast<bf16*>(smem), R, k0, k1);
    __syncthreads();
  }
  return off;
}

// A GEMV's activation fragments for chunk column k (lane: row g, 8 columns from k): hi rows g / g + 8 and lo rows
// g / g + 8 (zero where absent), from the shared-memory rows [R][K + 32] (hi) + [R][K + 32] (lo) or from L2.
template <int K, bool M16>
__device__ __forceinline__ void gemv_load_act(const GemvParams& p, const bf16* act, bool from_smem, int R, int g,
                                              int k, bool split, uint4& a0, uint4& a1, uint4& l0, uint4& l1) {
  constexpr int AST = K + 32;
  a0 = a1 = l0 = l1 = make_uint4(0, 0, 0, 0);
  if (from_smem) {
    if (g < R) {
      a0 = *reinterpret_cast<const uint4*>(act + (size_t)g * AST + k);
      if (split) l0 = *reinterpret_cast<const uint4*>(act + (size_t)(R + g) * AST + k);
    }
    if (M16 && g + 8 < R) {
      a1 = *reinterpret_cast<const uint4*>(act + (size_t)(g + 8) * AST + k);
      if (split) l1 = *reinterpret_cast<const uint4*>(act + (size_t)(R + g + 8) * AST + k);
    }
  } else {
    if (g < R) {
      a0 = ld_cg16(p.A + (size_t)g * K + k);
      if (split) l0 = ld_cg16(p.A_lo + (size_t)g * K + k);
    }
    if (M16 && g + 8 < R) {
      a1 = ld_cg16(p.A + (size_t)(g + 8) * K + k);
      if (split) l1 = ld_cg16(p.A_lo + (size_t)(g + 8) * K + k);
    }
  }
}

// R <= 8 rows: the MMA A fragments of chunk column k, hi rows 0..7 in a0 and their lo parts as rows 8..15 in a1.
template <int K>
__device__ __forceinline__ void gemv_act8(const GemvParams& p, const bf16* act, bool from_smem, int R, int g, int k,
                                          bool split, uint4& a0, uint4& a1) {
  uint4 a1u, l0, l1;
  gemv_load_act<K, false>(p, act, from_smem, R, g, k, split, a0, a1u, l0, l1);
  a1 = l0;
}
// The two MMAs of one 32-column chunk (k order permuted identically for A and B, see below).
__device__ __forceinline__ void mma_chunk(float (&acc)[4], const uint4& a0, const uint4& a1, const uint4& b) {
  mma_bf16_16816(acc, a0.x, a1.x, a0.y, a1.y, b.x, b.y);
  mma_bf16_16816(acc, a0.z, a1.z, a0.w, a1.w, b.z, b.w);
}

// ---- GEMV on tensor cores: y[r][n] = sum_k a[r][k] W[n][k] for R <= 16 rows, one weight read for all rows -------
// A block computes tiles of NT = 8 NTILE outputs over a K range (KSPLIT ranges per tile, combined by the last of the
// pair in a fixed order); its NW warps split that range. Each warp runs mma.m16n8k16 (rows = M, padded with zeros);
// the k order inside a 32-wide chunk is permuted identically for A and B so that every lane loads 16 contiguous
// bytes of the weight row and of the activation row. Persistent: a block walks tiles blockIdx.x, +gridDim.x, ...
// with the next tile's weights loading into a second register set while the current one is reduced; the first
// tile's weights are requested before griddepcontrol.wait, i.e. while the previous kernel still runs.
// Weight layouts: blocked (the default since session 3): 8-row x 32-column blocks of 512 B, block (n/8, k/32) at
// ((n/8) (K/32) + k/32) 256 elements, row-major inside, so a warp's fragment load is one contiguous 512 B request
// instead of 8 rows x 64 B; or row-major [N][K] (PyTorch Linear layout; EngineOptions::variant bit 3).
// Element offset of a lane's 16-byte weight fragment: row n (= 8-row group n / 8, row g inside it), 32-column chunk kc.
// wmask (variant bit 19, timing diagnostics, wrong outputs): offsets folded into the first 2 MB of the matrix.
// Session 11 tried both as compile-time switches: batch-4 TPOT rose 1.2% (another register allocation, more spill in
// the one-round gate/up), so they stay runtime fields.
template <int K>
__device__ __forceinline__ size_t gemv_w_off(int n, int kc, int g, int t4, bool blocked,
                                             unsigned long long wmask) {
  size_t off = blocked ? ((size_t)(n >> 3) * (K / 32) + kc) * 256 + (size_t)(g * 32 + t4 * 8)
                       : (size_t)n * K + kc * 32 + t4 * 8;
  if (wmask) off &= wmask;
  return off;
}
template <int K, int NTILE, int NW, int KSPLIT>
__device__ __forceinline__ void gemv_load_w(uint4 (&w)[K / KSPLIT / (32 * NW)][NTILE], const bf16* W, int N, int t,
                                            int warp, int g, int t4, uint64_t pol, bool blocked,
                                            unsigned long long wmask) {
  constexpr int KS = K / KSPLIT, CPW = KS / (32 * NW), NT = 8 * NTILE;
  const int n0 = (t / KSPLIT) * NT, kbase = (t % KSPLIT) * KS;
#pragma unroll
  for (int c = 0; c < CPW; ++c) {
    const int kc = kbase / 32 + c * NW + warp;  // 32-column chunk
#pragma unroll
    for (int tt = 0; tt < NTILE; ++tt) {
      const int n = n0 + tt * 8 + g;
      const size_t off = gemv_w_off<K>(n, kc, g, t4, blocked, wmask);
      w[c][tt] = (n < N) ? (pol ? ld_weight_hint(W + off, pol) : ld_weight(W + off)) : make_uint4(0, 0, 0, 0);
    }
  }
}
// MINB: minimum resident blocks per SM asked of the compiler (2: at most 128 registers, so two blocks share an SM,
// more weight bytes in flight and one block's reduction/epilogue overlaps the other's loads).
// PIPE 0: the session-3..6 order (the next-but-one tile's weights requested after this tile's reduction and
// epilogue). PIPE 1 (session 7): both register sets requested before griddepcontrol.wait, and a set is refilled
// with the next-but-one tile's weights right after its MMAs, so the reduction / split-K combine / epilogue chain
// of a tile overlaps the loads of two tiles instead of one (both sets stay live through the epilogue: the 16-output
// kernels spill at 128 registers). Same values and summation order: outputs bitwise equal.
template <int K, int NTILE, int NW, int KSPLIT, int EPI, bool LN, bool M16, int MINB, int PIPE = 0>
__global__ void __launch_bounds__(NW * 32, MINB) gemv_kernel(const GemvParams p) {
  constexpr int KS = K / KSPLIT;
  constexpr int CPW = KS / (32 * NW);
  static_assert(CPW * 32 * NW == KS, "K split");
  static_assert(!LN || (K == D && KSPLIT == 1), "LN input is the residual stream");
  static_assert(EPI != EPI_SWIGLU || NTILE % 2 == 0, "gate/up tiles come in pairs");
  static_assert(EPI != EPI_LMHEAD || NW >= MAXP, "one warp per variation in the tail");
  constexpr int NT = 8 * NTILE;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const int total = (p.N + NT - 1) / NT * KSPLIT;
  int t = blockIdx.x;
  const TlStamp tls(p.tl);

  uint4 wa[CPW][NTILE], wb[CPW][NTILE];
  const uint64_t pol = policy_evict_first();
  gemv_load_w<K, NTILE, NW, KSPLIT>(wa, p.W, p.N, t, warp, g, t4, pol, p.blocked, p.wmask);
  if constexpr (PIPE == 1)
    if (t + (int)gridDim.x < total)
      gemv_load_w<K, NTILE, NW, KSPLIT>(wb, p.W, p.N, t + gridDim.x, warp, g, t4, pol, p.blocked, p.wmask);
  pdl_handoff(tls);

  extern __shared__ __align__(16) unsigned char smem[];
  const int R = p.R;
  const bf16* act = reinterpret_cast<const bf16*>(smem);
  // A staged (non-LN) input covers only this block's K range when every tile of the block has the same one (gridDim
  // a multiple of KSPLIT, true for the persistent grids).
  const bool one_range = KSPLIT == 1 || gridDim.x % KSPLIT == 0;
  const int k0 = one_range ? (int)(blockIdx.x % KSPLIT) * KS : 0;
  const size_t off = gemv_stage_input<K, NW, LN, (M16 ? 4 : 2)>(p, smem, R, k0, one_range ? k0 + KS : K);
  const bool act_s = LN || p.act_smem;
  float* red = reinterpret_cast<float*>(smem + off);
  float* outs = red + NW * NTILE * 128;  // [16][NT]
  int* flag = reinterpret_cast<int*>(outs + 16 * NT);

  auto process = [&](uint4 (&w)[CPW][NTILE], int tile_id, int refill) {
    const int tile = tile_id / KSPLIT, ks = tile_id % KSPLIT;
    const int n0 = tile * NT, kbase = ks * KS;
    // The activation is hi + lo (split_store). R <= 8: the lo parts go into the unused MMA rows 8..15 (free) and
    // are added to rows 0..7 at the end; R > 8: a second MMA per fragment on the lo parts. Both give, per output,
    // (sum of hi products) + (sum of lo products) in the same order, so 1 and 8 prompts stay bitwise identical.
    float acc[NTILE][4], acc2[NTILE][4];
#pragma unroll
    for (int tt = 0; tt < NTILE; ++tt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[tt][i] = acc2[tt][i] = 0.f;
    const bool split = p.split != 0;
    // EPI_RESID: this thread's residual element requested now, consumed in the epilogue (session 6).
    float xpre = 0.f, apre = 0.f;
    bool have_pre = false;
    if constexpr (EPI == EPI_RESID) {
      have_pre = R * NT <= NW * 32;
      if (have_pre && (int)threadIdx.x < R * NT) {
        const int r = threadIdx.x / NT, col = n0 + threadIdx.x % NT;
        xpre = __ldcg(p.resid + (size_t)r * D + col);
        if (p.add2) apre = __ldcg(p.add2 + (size_t)r * D + col);
      }
    }
#pragma unroll
    for (int c = 0; c < CPW; ++c) {
      const int k = kbase + (c * NW + warp) * 32 + t4 * 8;
      uint4 a0, a1, l0, l1;  // hi row g, hi row g+8, lo row g, lo row g+8
      gemv_load_act<K, M16>(p, act, act_s, R, g, k, split, a0, a1, l0, l1);
      if constexpr (!M16) a1 = l0;  // rows 8..15 carry the lo parts of rows 0..7
#pragma unroll
      for (int tt = 0; tt < NTILE; ++tt) {
        mma_bf16_16816(acc[tt], a0.x, a1.x, a0.y, a1.y, w[c][tt].x, w[c][tt].y);
        mma_bf16_16816(acc[tt], a0.z, a1.z, a0.w, a1.w, w[c][tt].z, w[c][tt].w);
        if (M16 && split) {
          mma_bf16_16816(acc2[tt], l0.x, l1.x, l0.y, l1.y, w[c][tt].x, w[c][tt].y);
          mma_bf16_16816(acc2[tt], l0.z, l1.z, l0.w, l1.w, w[c][tt].z, w[c][tt].w);
        }
      }
    }
    // PIPE 1: this register set is free now: refill it with tile `refill` (the next-but-one of this block).
    if constexpr (PIPE == 1)
      if (refill < total) gemv_load_w<K, NTILE, NW, KSPLIT>(w, p.W, p.N, refill, warp, g, t4, pol, p.blocked, p.wmask);
    gemv_reduce<NTILE, NW, M16>(acc, acc2, split, red, outs);

    if constexpr (KSPLIT > 1) {
      float* mine = p.ks_scratch + ((size_t)tile * KSPLIT + ks) * 16 * NT;
      for (int e = threadIdx.x; e < R * NT; e += NW * 32) mine[e] = outs[e];
      __syncthreads();
      if (threadIdx.x == 0) {  // one fence by one thread after the barrier (see the lm_head tail)
        const bool last = arrive(&p.ks_cnt[tile]) == KSPLIT - 1;
        if (last) arrival_acquire();
        *flag = last;
      }
      __syncthreads();
      if (!*flag) return;  // another K range finishes this tile
      for (int e = threadIdx.x; e < R * NT; e += NW * 32) {
        float s = 0.f;
#pragma unroll
        for (int q = 0; q < KSPLIT; ++q) s += __ldcg(p.ks_scratch + ((size_t)tile * KSPLIT + q) * 16 * NT + e);
        outs[e] = s;
      }
      if (threadIdx.x == 0) p.ks_cnt[tile] = 0;
      __syncthreads();
    }

    gemv_epilogue<NTILE, NW, EPI>(p, outs, flag, n0, tile, total, xpre, apre, have_pre);
  };

  // Two register sets, alternating: the next tile's weights are in flight while this one is reduced.
  if constexpr (PIPE == 1) {
    const int G = gridDim.x;
    for (;;) {
      process(wa, t, t + 2 * G);
      __syncthreads();
      t += G;
      if (t >= total) break;
      process(wb, t, t + 2 * G);
      __syncthreads();
      t += G;
      if (t >= total) break;
    }
  } else {
    for (;;) {
      int tn = t + gridDim.x;
      if (tn < total)
        gemv_load_w<K, NTILE, NW, KSPLIT>(wb, p.W, p.N, tn, warp, g, t4, pol, p.blocked, p.wmask);
      process(wa, t, total);
      __syncthreads();
      if (tn >= total) break;
      t = tn;
      tn = t + gridDim.x;
      if (tn < total) gemv_load_w<K, NTILE, NW, KSPLIT>(wa, p.W, p.N, tn, warp, g, t4, pol, p.blocked, p.wmask);
      process(wb, t, total);
      __syncthreads();
      if (tn >= total) break;
      t = tn;
    }
  }
}

// ---- one-round GEMV (session 7): every weight byte of the kernel requested before griddepcontrol.wait ----------
// For R <= 8 rows and at most MAXT work items per block (the host checks total <= gridDim.x * MAXT and
// gridDim.x % KSPLIT == 0, so all of a block's items share one K range). A block owns items blockIdx.x + j G
// (j < MAXT, G = gridDim.x: the persistent kernel's assignment), holds all their weights in MAXT register sets
// (requested before griddepcontrol.wait), runs the MMAs of all its items off one activation fragment per chunk,
// then reduces them one after the other and runs the split-K arrivals of all its items with one fence (one thread,
// the items' atomics back to back) and one barrier pair, so the block's L2 round trips are paid once instead of
// once per item. Same chunk order and reduction order per item as gemv_kernel: outputs bitwise equal.
// Session 8, NSM > 0 (gate/up: 768 items of 16 outputs, 48 KB each, on 264 blocks; three register sets would not
// fit in 128 registers): the last NSM items of a block are copied into shared memory, also before
// griddepcontrol.wait, so the kernel is still one round (session 11: as bulk copies issued by one thread before the
// register loads, completing on an mbarrier; session 8 had 16-byte cp.async per thread after them). The items then
// run one after the other (MMAs of item j, its reduction, then item j + 1; the LN input sits in shared memory, so
// re-reading its fragments per item is cheap) to keep one accumulator set live. Per item the same sums in the same order: bitwise equal.
template <int K, int NTILE, int NW, int KSPLIT, int EPI, int MAXT, int NSM = 0>
__global__ void __launch_bounds__(NW * 32, 2) gemv1_kernel(const GemvParams p) {
  constexpr int KS = K / KSPLIT;
  constexpr int CPW = KS / (32 * NW);
  static_assert(CPW * 32 * NW == KS, "K split");
  static_assert(EPI == EPI_QKV || EPI == EPI_RESID || EPI == EPI_SWIGLU,
                "one-round GEMV: qkv, gate/up (LN) or residual epilogues");
  static_assert(EPI != EPI_SWIGLU || NTILE % 2 == 0, "gate/up tiles come in pairs");
  static_assert(NSM >= 0 && NSM < MAXT, "at least one register item");
  constexpr bool LN = EPI != EPI_RESID;
  static_assert(!LN || (K == D && KSPLIT == 1), "LN input is the residual stream");
  constexpr int NT = 8 * NTILE, NR = MAXT - NSM, NTHR = NW * 32;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const int total = (p.N + NT - 1) / NT * KSPLIT;
  const int G = gridDim.x;
  const TlStamp tls(p.tl);

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // [mbarrier (16 B, NSM > 0)][NSM shared-memory weight items][input rows | red | outs | flags]
  constexpr size_t WS_OFF = NSM > 0 ? 16 : 0;
  uint64_t* wbar = reinterpret_cast<uint64_t*>(smem_raw);
  uint4* ws = reinterpret_cast<uint4*>(smem_raw + WS_OFF);
  unsigned char* smem = smem_raw + WS_OFF + (size_t)NSM * CPW * NTILE * NTHR * 16;
  uint4 w[NR][CPW][NTILE];
  const uint64_t pol = policy_evict_first();
  // The shared-memory items' copies are issued first (session 11): they hold no registers, so a register spill
  // among the later register loads (a spill store waits for its load's data) cannot hold them back.
  // One thread issues them as bulk copies: an item's rows are NTILE 8-row groups, each K range of a group
  // contiguous in the blocked layout (KS * 16 bytes), copied as is: ws[item][tt][block kc][lane] (uint4).
  if constexpr (NSM > 0) {
    if (threadIdx.x == 0) {
      mbar_init(wbar, 1);
      mbar_fence_init();
      unsigned bytes = 0;
#pragma unroll
      for (int j = NR; j < MAXT; ++j)
        if ((int)blockIdx.x + j * G < total) bytes += NTILE * KS * 16;
      mbar_expect_tx(wbar, bytes);
#pragma unroll
      for (int j = NR; j < MAXT; ++j) {
        const int t = blockIdx.x + j * G;
        if (t >= total) break;
        const int n0 = (t / KSPLIT) * NT, kc0 = (t % KSPLIT) * (KS / 32);
#pragma unroll
        for (int tt = 0; tt < NTILE; ++tt)
          bulk_g2s_hint(ws + ((size_t)(j - NR) * NTILE + tt) * (KS / 32) * 32,
                        p.W + gemv_w_off<K>(n0 + 8 * tt, kc0, 0, 0, true, p.wmask), KS * 16, wbar, pol);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < NR; ++j)
    if ((int)blockIdx.x + j * G < total)
      gemv_load_w<K, NTILE, NW, KSPLIT>(w[j], p.W, p.N, blockIdx.x + j * G, warp, g, t4, pol, p.blocked, p.wmask);
  pdl_handoff(tls);

  const int R = p.R;
  const bf16* act = reinterpret_cast<const bf16*>(smem);
  const int ks = (int)blockIdx.x % KSPLIT, kbase = ks * KS;
  // NSM > 0: LN input items one at a time (fewer live registers next to the two weight sets)
  const size_t off = gemv_stage_input<K, NW, LN, (NSM > 0 ? 1 : 2)>(p, smem, R, kbase, kbase + KS);
  const bool act_s = LN || p.act_smem;
  float* red = reinterpret_cast<float*>(smem + off);
  float* outs = red + NW * NTILE * 128;  // [MAXT][16][NT]
  int* flag = reinterpret_cast<int*>(outs + MAXT * 16 * NT);  // [0..MAXT): split-K last flags; [MAXT]: epilogue

  // EPI_RESID: this thread's residual element of each item, requested before the MMAs (R * NT <= threads).
  float xpre[MAXT], apre[MAXT];
  const bool have_pre = EPI == EPI_RESID && R * NT <= NW * 32;
#pragma unroll
  for (int j = 0; j < MAXT; ++j) {
    xpre[j] = apre[j] = 0.f;
    if constexpr (EPI == EPI_RESID) {
      const int it = blockIdx.x + j * G;
      if (have_pre && it < total && (int)threadIdx.x < R * NT) {
        const int r = threadIdx.x / NT, col = (it / KSPLIT) * NT + threadIdx.x % NT;
        xpre[j] = __ldcg(p.resid + (size_t)r * D + col);
        if (p.add2) apre[j] = __ldcg(p.add2 + (size_t)r * D + col);
      }
    }
  }
  const float acc2[NTILE][4] = {};  // unused at R <= 8 (lo parts ride in rows 8..15)
  const bool split = p.split != 0;
  int nmine = 0;
  if constexpr (NSM > 0) {
    // items one after the other (see above); the shared-memory items wait for their own copies only
#pragma unroll
    for (int j = 0; j < MAXT; ++j) {
      if ((int)blockIdx.x + j * G >= total) break;
      if (j == NR) mbar_wait(wbar, 0);
      float acc[NTILE][4] = {};
#pragma unroll
      for (int c = 0; c < CPW; ++c) {
        uint4 a0, a1;
        gemv_act8<K>(p, act, act_s, R, g, kbase + (c * NW + warp) * 32 + t4 * 8, split, a0, a1);
#pragma unroll
        for (int tt = 0; tt < NTILE; ++tt)
          mma_chunk(acc[tt], a0, a1,
                    j < NR ? w[j < NR ? j : 0][c][tt]
                           : ws[(((size_t)(j - NR) * NTILE + tt) * (KS / 32) + c * NW + warp) * 32 + lane]);
      }
      nmine = j + 1;
      gemv_reduce<NTILE, NW, false>(acc, acc2, split, red, outs + j * 16 * NT);
    }
  } else {
    float acc[MAXT][NTILE][4] = {};
#pragma unroll
    for (int c = 0; c < CPW; ++c) {
      uint4 a0, a1;
      gemv_act8<K>(p, act, act_s, R, g, kbase + (c * NW + warp) * 32 + t4 * 8, split, a0, a1);
#pragma unroll
      for (int j = 0; j < MAXT; ++j)
#pragma unroll
        for (int tt = 0; tt < NTILE; ++tt) mma_chunk(acc[j][tt], a0, a1, w[j][c][tt]);
    }
#pragma unroll
    for (int j = 0; j < MAXT; ++j) {
      if ((int)blockIdx.x + j * G >= total) break;
      nmine = j + 1;
      gemv_reduce<NTILE, NW, false>(acc[j], acc2, split, red, outs + j * 16 * NT);
    }
  }

  if constexpr (KSPLIT > 1) {
    for (int e = threadIdx.x; e < nmine * R * NT; e += NW * 32) {
      const int j = e / (R * NT), q = e % (R * NT), tile = (blockIdx.x + j * G) / KSPLIT;
      p.ks_scratch[((size_t)tile * KSPLIT + ks) * 16 * NT + q] = outs[j * 16 * NT + q];
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // one fence for all items, then their arrivals (independent atomics)
      arrival_release();
      unsigned old[MAXT];
#pragma unroll
      for (int j = 0; j < MAXT; ++j)
        if (j < nmine) old[j] = atomicAdd(&p.ks_cnt[(blockIdx.x + j * G) / KSPLIT], 1u);
      bool any = false;
#pragma unroll
      for (int j = 0; j < MAXT; ++j)
        if (j < nmine) {
          flag[j] = old[j] == (unsigned)(KSPLIT - 1);
          any = any || flag[j];
        }
      if (any) arrival_acquire();
    }
    __syncthreads();
    // items this block finishes: the KSPLIT partials summed in a fixed order (all loads of all items in flight)
    for (int e = threadIdx.x; e < nmine * R * NT; e += NW * 32) {
      const int j = e / (R * NT), q = e % (R * NT), tile = (blockIdx.x + j * G) / KSPLIT;
      if (!flag[j]) continue;
      float s = 0.f;
#pragma unroll
      for (int kq = 0; kq < KSPLIT; ++kq) s += __ldcg(p.ks_scratch + ((size_t)tile * KSPLIT + kq) * 16 * NT + q);
      outs[j * 16 * NT + q] = s;
    }
    if ((int)threadIdx.x < nmine && flag[threadIdx.x]) p.ks_cnt[(blockIdx.x + threadIdx.x * G) / KSPLIT] = 0;
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < MAXT; ++j) {
    if (j >= nmine) break;
    if (KSPLIT > 1 && !flag[j]) continue;
    const int tile = (blockIdx.x + j * G) / KSPLIT;
    gemv_epilogue<NTILE, NW, EPI>(p, outs + j * 16 * NT, flag + MAXT, tile * NT, tile, total, xpre[j], apre[j],
                                     have_pre);
  }
}

// ---- decode attention (flash-decoding): q/k RMSNorm + RoPE + KV write + split softmax + last-block combine -------
struct AttnParams {
  const float* qkv;    // [R][QKV_LD]: raw q | raw k | v (+bias), fp32
  const float* qnorm;
  const float* knorm;
  bf16* kc;            // this layer's caches [R][H][T][HD] (rotated keys)
  bf16* vc;
  int T;               // slots per (row, head)
  int coff;            // slot of shape position j is coff + j (s for dual blocks, 0 for the single block)
  int slot0_only;      // reference single-block decode: the query sees slot 0 only
  const float2* rope;  // [positions][64] (cos, sin)
  const Dyn* dyn;
  float* part;         // [R][H][maxs][HD + 2]
  unsigned* cnt;       // [R][H], left at 0
  bf16* out;           // [R][D] hi part
  bf16* out_lo;        // [R][D] lo part
  int maxs;
  unsigned long long* tl;  // diagnostics only: timeline stamps (TlStamp) or null
};
constexpr int ATT_MAXSPLIT = 128;  // splits per (row, head) the combine's shared arrays hold (host-checked)

__device__ inline float block128_sum(float v, float* red4) {
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red4[threadIdx.x >> 5] = v;
  __syncthreads();
  return red4[0] + red4[1] + red4[2] + red4[3];
}

// RMSNorm (eps 1e-5) then interleaved RoPE, all fp32 (keys are rounded to bf16 only when cached). Thread = dim.
// ss: the block's sum of raw^2 (block128_sum order).
__device__ inline float rms_rope(float raw, float ss, float wnorm, float2 cs) {
  const float y = raw * rsqrtf(ss * (1.f / HD) + 1e-5f) * wnorm;
  const float other = __shfl_xor_sync(0xffffffffu, y, 1);
  float o;
  if ((threadIdx.x & 1) == 0) o = __fsub_rn(__fmul_rn(y, cs.x), __fmul_rn(other, cs.y));
  else o = __fadd_rn(__fmul_rn(other, cs.y), __fmul_rn(y, cs.x));
  return o;
}
__device__ inline float norm_rope(float raw, float wnorm, float2 cs, float* red4) {
  return rms_rope(raw, block128_sum(raw * raw, red4), wnorm, cs);
}
// q and k of the current position in one block reduction (red8: 8 floats): the same sums in the same order as two
// block128_sum calls, one barrier pair instead of two.
__device__ inline void norm_rope_qk(float qraw, float kraw, float wq, float wk, float2 cs, float* red8, float& qo,
                                    float& ko) {
  const float sq = warp_sum(qraw * qraw), sk = warp_sum(kraw * kraw);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    red8[threadIdx.x >> 5] = sq;
    red8[4 + (threadIdx.x >> 5)] = sk;
  }
  __syncthreads();
  qo = rms_rope(qraw, red8[0] + red8[1] + red8[2] + red8[3], wq, cs);
  ko = rms_rope(kraw, red8[4] + red8[5] + red8[6] + red8[7], wk, cs);
}

__global__ void __launch_bounds__(128) attn_decode_kernel(const AttnParams p) {
  const int split = blockIdx.x, h = blockIdx.y, r = blockIdx.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const TlStamp tls(p.tl);
  // Everything read before pdl_wait() was written at least two kernels back (position, earlier KV slots).
  const int pos = __ldcg(&p.dyn->pos);
  const int cur = p.coff + pos;
  const int L = p.slot0_only ? 1 : cur + 1;
  const int nsplit = (L + ACH - 1) / ACH;
  if (split >= nsplit) return;
  const int j0 = split * ACH;
  const size_t base = (size_t)(r * H + h) * p.T * HD;
  uint2 kreg[AKPW], vreg[AKPW];
#pragma unroll
  for (int kk = 0; kk < AKPW; ++kk) {
    const int j = j0 + warp * AKPW + kk;
    if (j < L && j != cur) {
      kreg[kk] = __ldcg(reinterpret_cast<const uint2*>(p.kc + base + (size_t)j * HD + lane * 4));
      vreg[kk] = __ldcg(reinterpret_cast<const uint2*>(p.vc + base + (size_t)j * HD + lane * 4));
    } else {
      kreg[kk] = make_uint2(0, 0);
      vreg[kk] = make_uint2(0, 0);
    }
  }
  // constants of this step (RoPE row of pos, norm weights), also before the wait (session 8)
  const float2 cs = p.rope[pos * (HD / 2) + tid / 2];
  const float wqn = p.qnorm[tid], wkn = p.knorm[tid];
  pdl_handoff(tls);

  __shared__ __align__(16) float qs[HD], kn[HD], vn[HD], red4[8], wm[4], wl[4], ow[4][HD];
  __shared__ int last;
  const float* qrow = p.qkv + (size_t)r * QKV_LD + h * HD;
  const bool has_cur = cur < L && cur >= j0 && cur < j0 + ACH;
  const float qraw = __ldcg(qrow + tid);
  // session 8: the block holding the current slot requests q, k and v together and normalises q and k in one
  // reduction (block-uniform branch)
  if (has_cur) {
    const float kraw = __ldcg(qrow + D + tid);
    const float vraw = __ldcg(qrow + 2 * D + tid);
    float qo, kq;
    norm_rope_qk(qraw, kraw, wqn, wkn, cs, red4, qo, kq);
    qs[tid] = qo;
    // the current key/value as cached (bf16), so every step sees the same values for this slot
    const bf16 kb = __float2bfloat16_rn(kq);
    const bf16 vv = __float2bfloat16_rn(vraw);
    kn[tid] = bf(kb);
    vn[tid] = bf(vv);
    p.kc[base + (size_t)cur * HD + tid] = kb;
    p.vc[base + (size_t)cur * HD + tid] = vv;
  } else {
    qs[tid] = norm_rope(qraw, wqn, cs, red4);
  }
  __syncthreads();
  const float4 q4 = *reinterpret_cast<const float4*>(qs + lane * 4);
  constexpr float scale = 0.08838834764831845f;  // 1/sqrt(128)
  float sc[AKPW];
  float mloc = -INFINITY;
#pragma unroll
  for (int kk = 0; kk < AKPW; ++kk) {
    const int j = j0 + warp * AKPW + kk;
    float k0, k1, k2, k3;
    if (j == cur && has_cur) {
      k0 = kn[lane * 4];
      k1 = kn[lane * 4 + 1];
      k2 = kn[lane * 4 + 2];
      k3 = kn[lane * 4 + 3];
    } else {
      k0 = bf_lo(kreg[kk].x);
      k1 = bf_hi(kreg[kk].x);
      k2 = bf_lo(kreg[kk].y);
      k3 = bf_hi(kreg[kk].y);
    }
    float d = q4.x * k0 + q4.y * k1 + q4.z * k2 + q4.w * k3;
    d = warp_sum(d);
    sc[kk] = (j < L) ? d * scale : -INFINITY;
    mloc = fmaxf(mloc, sc[kk]);
  }
  if (lane == 0) wm[warp] = mloc;
  __syncthreads();
  const float m = fmaxf(fmaxf(wm[0], wm[1]), fmaxf(wm[2], wm[3]));
  float l = 0.f, o0 = 0.f, o1 = 0.f, o2 = 0.f, o3 = 0.f;
#pragma unroll
  for (int kk = 0; kk < AKPW; ++kk) {
    const int j = j0 + warp * AKPW + kk;
    const float pj = (j < L) ? __expf(sc[kk] - m) : 0.f;
    float v0, v1, v2, v3;
    if (j == cur && has_cur) {
      v0 = vn[lane * 4];
      v1 = vn[lane * 4 + 1];
      v2 = vn[lane * 4 + 2];
      v3 = vn[lane * 4 + 3];
    } else {
      v0 = bf_lo(vreg[kk].x);
      v1 = bf_hi(vreg[kk].x);
      v2 = bf_lo(vreg[kk].y);
      v3 = bf_hi(vreg[kk].y);
    }
    l += pj;
    o0 += pj * v0;
    o1 += pj * v1;
    o2 += pj * v2;
    o3 += pj * v3;
  }
  *reinterpret_cast<float4*>(&ow[warp][lane * 4]) = make_float4(o0, o1, o2, o3);
  if (lane == 0) wl[warp] = l;
  __syncthreads();
  const float od = ow[0][tid] + ow[1][tid] + ow[2][tid] + ow[3][tid];
  const float lsum = wl[0] + wl[1] + wl[2] + wl[3];
  if (nsplit == 1) {
    split_store(p.out, p.out_lo, (size_t)r * D + h * HD + tid, od / lsum);
    return;
  }
  float* mypart = p.part + ((size_t)(r * H + h) * p.maxs + split) * (HD + 2);
  mypart[tid] = od;
  if (tid == 0) {
    mypart[HD] = m;
    mypart[HD + 1] = lsum;
  }
  __syncthreads();
  if (tid == 0) {  // one fence by one thread after the barrier (see the lm_head tail)
    const bool l = arrive(&p.cnt[r * H + h]) == (unsigned)nsplit - 1;
    if (l) arrival_acquire();
    last = l;
  }
  __syncthreads();
  if (!last) return;
  const float* parts = p.part + (size_t)(r * H + h) * p.maxs * (HD + 2);
  // Session 7: the splits' (m, l) go to shared memory in one parallel load, each thread's o values are loaded
  // 16 at a time (all in flight together), then combined in split order (max, then the rescaled sums).
  __shared__ float cm[ATT_MAXSPLIT], cl[ATT_MAXSPLIT];
  for (int s = tid; s < nsplit; s += 128) {
    cm[s] = __ldcg(parts + s * (HD + 2) + HD);
    cl[s] = __ldcg(parts + s * (HD + 2) + HD + 1);
  }
  float ov[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) ov[i] = i < nsplit ? __ldcg(parts + i * (HD + 2) + tid) : 0.f;
  __syncthreads();
  float M = -INFINITY;
  for (int s = 0; s < nsplit; ++s) M = fmaxf(M, cm[s]);
  float Ls = 0.f, O = 0.f;
  for (int s0 = 0; s0 < nsplit; s0 += 16) {
    if (s0 > 0) {
#pragma unroll
      for (int i = 0; i < 16; ++i) ov[i] = s0 + i < nsplit ? __ldcg(parts + (s0 + i) * (HD + 2) + tid) : 0.f;
    }
#pragma unroll
    for (int i = 0; i < 16; ++i)
      if (s0 + i < nsplit) {
        const float f = __expf(cm[s0 + i] - M);
        Ls += cl[s0 + i] * f;
        O += ov[i] * f;
      }
  }
  split_store(p.out, p.out_lo, (size_t)r * D + h * HD + tid, O / Ls);
  if (tid == 0) p.cnt[r * H + h] = 0;
}

// ---- nucleus (top-p) sampling on the guided logits: one block of 1024 threads per variation ----------------------
struct ToppParams {
  const Ctl* ctl;
  Dyn* dyn;
  const float* guided;  // [P][vocab]
  const float* wte;
  float* x;
  float* stats;
  int* tokens;
  int* host_tokens;
};

__device__ inline unsigned long long splitmix64(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <int NTHR>
__device__ inline float block_sum_f(float v, float* sh) {
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < NTHR / 32; ++i) s += sh[i];
  return s;
}
template <int NTHR>
__device__ inline float block_max_f(float v, float* sh) {
  v = warp_max(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = -INFINITY;
#pragma unroll
  for (int i = 0; i < NTHR / 32; ++i) s = fmaxf(s, sh[i]);
  return s;
}

constexpr int TOPP_THREADS = 1024, TOPP_PER = 16;  // 16384 logits
__global__ void __launch_bounds__(TOPP_THREADS) topp_kernel(const ToppParams tp) {
  pdl_wait();
  pdl_trigger();
  __shared__ float sh[32];
  __shared__ int chosen;
  __shared__ int tok_s[MAXP];
  __shared__ int last;
  const Ctl* ctl = tp.ctl;
  const int pv = blockIdx.x, V = ctl->vocab;
  const int pos = __ldcg(&tp.dyn->pos);
  float lg[TOPP_PER];
  const int k0 = threadIdx.x * TOPP_PER;
#pragma unroll
  for (int i = 0; i < TOPP_PER; ++i) lg[i] = (k0 + i < V) ? __ldcg(tp.guided + (size_t)pv * V + k0 + i) : -INFINITY;
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < TOPP_PER; ++i) mx = fmaxf(mx, lg[i]);
  mx = block_max_f<TOPP_THREADS>(mx, sh);
  float se = 0.f;
#pragma unroll
  for (int i = 0; i < TOPP_PER; ++i) {
    lg[i] = expf(lg[i] - mx);
    se += lg[i];
  }
  se = block_sum_f<TOPP_THREADS>(se, sh);
  const float inv = 1.f / se;
#pragma unroll
  for (int i = 0; i < TOPP_PER; ++i) lg[i] *= inv;  // probabilities
  const float pmax = inv;                              // exp(0) / sum
  const float top_p = ctl->top_p;
  // G(v) = sum of probabilities >= v. Keep the longest prefix (descending) with cumulative sum <= top_p, >= 1 token.
  auto G = [&](float v) {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < TOPP_PER; ++i) s += (lg[i] >= v) ? lg[i] : 0.f;
    return block_sum_f<TOPP_THREADS>(s, sh);
  };
  float thr = pmax;
  if (G(pmax) <= top_p) {
    unsigned lo = 0, hi = __float_as_uint(pmax);
    while (lo < hi) {
      const unsigned mid = lo + (hi - lo) / 2;
      if (G(__uint_as_float(mid)) <= top_p) hi = mid;
      else lo = mid + 1;
    }
    thr = __uint_as_float(lo);
  }
  float local = 0.f;
#pragma unroll
  for (int i = 0; i < TOPP_PER; ++i) local += (lg[i] >= thr) ? lg[i] : 0.f;
  // exclusive scan of per-thread kept mass (index order)
  float incl = local;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float v = __shfl_up_sync(0xffffffffu, incl, o);
    if ((threadIdx.x & 31) >= o) incl += v;
  }
  __shared__ float wsum[32];
  __syncthreads();
  if ((threadIdx.x & 31) == 31) wsum[threadIdx.x >> 5] = incl;
  if (threadIdx.x == 0) chosen = 0x7fffffff;
  __syncthreads();
  float wbase = 0.f, total = 0.f;
  for (int i = 0; i < TOPP_THREADS / 32; ++i) {
    if (i < (int)(threadIdx.x >> 5)) wbase += wsum[i];
    total += wsum[i];
  }
  const float excl = wbase + incl - local;
  const unsigned long long h =
      splitmix64(ctl->seed ^ splitmix64(((unsigned long long)pv << 32) ^ (unsigned long long)(unsigned)pos));
  const float u = (float)((h >> 40) * (1.0 / 16777216.0)) * total;
  float run = excl;
#pragma unroll
  for (int i = 0; i < TOPP_PER; ++i) {
    if (lg[i] >= thr) {
      run += lg[i];
      if (run > u) {
        atomicMin(&chosen, k0 + i);
        break;
      }
    }
  }
  __syncthreads();
  if (chosen == 0x7fffffff) {  // rounding at the very end of the range: take the last kept index
    int cand = -1;
#pragma unroll
    for (int i = 0; i < TOPP_PER; ++i)
      if (lg[i] >= thr) cand = k0 + i;
    __syncthreads();
    if (threadIdx.x == 0) chosen = -1;
    __syncthreads();
    if (cand >= 0) atomicMax(&chosen, cand);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    int t = chosen;
    if (t < 0 || t >= V) t = 0;
    tok_s[pv] = ctl->forced ? ctl->forced_tok[pv] : t;
  }
  __syncthreads();
  emit_tokens(tok_s, pv, pv + 1, ctl, pos, tp.wte, tp.x, tp.stats, tp.tokens, tp.host_tokens, blockDim.x);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = (atomicAdd(&tp.dyn->cnt_topp, 1u) == gridDim.x - 1);
  __syncthreads();
  if (last && threadIdx.x == 0) {
    tp.dyn->cnt_topp = 0;
    tp.dyn->pos = pos + 1;
  }
}

// ---- step-0 initialisation: x = BOS embedding for every row, its stats ------------------------------------------
__global__ void init_rows_kernel(const float* wte, int tok, int R, float* x, float* stats) {
  for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < R * D; v += gridDim.x * blockDim.x)
    x[v] = wte[(size_t)tok * D + v % D];
  for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < R * NSLOT; v += gridDim.x * blockDim.x) {
    const float* e = wte + (size_t)tok * D + (v % NSLOT) * 8;
    float s = 0.f, q = 0.f;
    for (int c = 0; c < 8; ++c) {
      s += e[c];
      q += e[c] * e[c];
    }
    reinterpret_cast<float2*>(stats)[v] = make_float2(s, q);
  }
}

// ---- load-time conversion: fp32 -> bf16 (RNE), with the gate/up interleave of 8-row groups -----------------------
// mode 0: dst row = src row; 1: gate (dst row = 16 (j/8) + j%8); 2: up (same + 8).
__global__ void convert_kernel(const float* src, bf16* dst, long rows, long cols, int mode, int blocked) {
  const long n = rows * cols;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    const long j = i / cols, c = i % cols;
    long dr = j;
    if (mode == 1) dr = 16 * (j / 8) + j % 8;
    else if (mode == 2) dr = 16 * (j / 8) + j % 8 + 8;
    const long o = (blocked && cols % 32 == 0) ? ((dr >> 3) * (cols / 32) + c / 32) * 256 + (dr & 7) * 32 + c % 32
                                               : dr * cols + c;
    dst[o] = __float2bfloat16_rn(src[i]);
  }
}

// ---- cond-stream prefill kernels (rows m = r * s + j) ------------------------------------------------------------
// The bf16 GEMM operands are split like the decode GEMV's (split_store): the hi parts are rows 0..M-1 and the lo
// parts rows M..2M-1 of one GEMM of 2M rows, so the fp32 output of row m is C[m] + C[M + m]. lo == 0: hi only.
// LayerNorm (no affine) of fp32 rows to bf16 hi (+ lo at Y + lo): block per row, 256 threads, two-pass.
__global__ void __launch_bounds__(256) ln_rows_kernel(const float* X, bf16* Y, float eps, long lo) {
  const float* x = X + (size_t)blockIdx.x * D;
  __shared__ float sh[32];
  float v[D / 256];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < D / 256; ++i) {
    v[i] = x[threadIdx.x + i * 256];
    s += v[i];
  }
  const float mean = block_sum_f<256>(s, sh) / D;
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < D / 256; ++i) q += (v[i] - mean) * (v[i] - mean);
  const float var = block_sum_f<256>(q, sh) / D;
  const float rstd = rsqrtf(var + eps);
#pragma unroll
  for (int i = 0; i < D / 256; ++i) {
    const size_t o = (size_t)blockIdx.x * D + threadIdx.x + i * 256;
    const float y = (v[i] - mean) * rstd;
    if (lo) split_store(Y, Y + lo, o, y);
    else Y[o] = __float2bfloat16_rn(y);
  }
}

// qkv GEMM output (fp32 [M][QKV_LD], lo rows at acc + lo) of the cond rows: (+v bias), q/k RMSNorm (RoPE at
// position 0 is the identity), q -> qbuf [M][D] fp32, k/v -> cache slots j (bf16). grid (M, H), 128 threads.
// kv_only: last dual block, the fp32 input is [M][2D] = k | v, both with bias (k bias = bias[0..D), v = bias[D..2D)).
__global__ void __launch_bounds__(128) cond_qkv_post_kernel(const float* acc, int ld, long lo, const bf16* bias,
                                                            int kv_only, const float* qnorm, const float* knorm, int s,
                                                            int T, float* qbuf, bf16* kc, bf16* vc) {
  __shared__ float red4[4];
  const int m = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
  const int r = m / s, j = m % s;
  const float* a = acc + (size_t)m * ld;
  auto A = [&](int c) { return lo ? a[c] + a[lo + c] : a[c]; };
  const size_t slot = ((size_t)(r * H + h) * T + j) * HD + d;
  if (!kv_only) {
    const float q = A(h * HD + d);
    const float ss = block128_sum(q * q, red4);
    qbuf[(size_t)m * D + h * HD + d] = q * rsqrtf(ss * (1.f / HD) + 1e-5f) * qnorm[d];
    const float k = A(D + h * HD + d);
    const float sk = block128_sum(k * k, red4);
    kc[slot] = __float2bfloat16_rn(k * rsqrtf(sk * (1.f / HD) + 1e-5f) * knorm[d]);
    vc[slot] = __float2bfloat16_rn(A(2 * D + h * HD + d) + bf(bias[h * HD + d]));
  } else {
    const float k = A(h * HD + d) + bf(bias[h * HD + d]);
    const float sk = block128_sum(k * k, red4);
    kc[slot] = __float2bfloat16_rn(k * rsqrtf(sk * (1.f / HD) + 1e-5f) * knorm[d]);
    vc[slot] = __float2bfloat16_rn(A(D + h * HD + d) + bf(bias[D + h * HD + d]));
  }
}

// Causal self-attention among the cond tokens: grid (R, H, ceil(s/4)), 4 warps, a warp per query.
// Output hi (+ lo at out + lo).
__global__ void __launch_bounds__(128) cond_attn_kernel(const float* qbuf, const bf16* kc, const bf16* vc, int s, int T,
                                                        bf16* out, long lo) {
  const int r = blockIdx.x, h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t base = (size_t)(r * H + h) * T * HD;
  constexpr float scale = 0.08838834764831845f;
  const int j = blockIdx.z * 4 + warp;
  if (j >= s) return;
  const float* q = qbuf + (size_t)(r * s + j) * D + h * HD;
  float sc[4];
  float mx = -INFINITY;
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int t = lane + 32 * u;
    sc[u] = -INFINITY;
    if (t <= j) {
      float d = 0.f;
      for (int e = 0; e < HD; ++e) d += q[e] * bf(kc[base + (size_t)t * HD + e]);
      sc[u] = d * scale;
    }
    mx = fmaxf(mx, sc[u]);
  }
  mx = warp_max(mx);
  float l = 0.f;
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    sc[u] = (lane + 32 * u <= j) ? __expf(sc[u] - mx) : 0.f;
    l += sc[u];
  }
  l = warp_sum(l);
  float o[4] = {0.f, 0.f, 0.f, 0.f};
  for (int t = 0; t <= j; ++t) {
    const float pt = __shfl_sync(0xffffffffu, sc[t / 32], t % 32);
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] += pt * bf(vc[base + (size_t)t * HD + lane * 4 + e]);
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const size_t i = (size_t)(r * s + j) * D + h * HD + lane * 4 + e;
    if (lo) split_store(out, out + lo, i, o[e] / l);
    else out[i] = __float2bfloat16_rn(o[e] / l);
  }
}

// x += acc (+ acc lo rows) + bias, all fp32.
__global__ void bias_resid_kernel(const float* acc, long lo, const bf16* bias, float* x, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    x[i] = x[i] + ((lo ? acc[i] + acc[lo + i] : acc[i]) + bf(bias[i % D]));
}

// SwiGLU on interleaved gate/up GEMM output [M][2F] (lo rows at acc + lo_in) -> bf16 [M][F] hi (+ lo at out + lo_out).
__global__ void swiglu_rows_kernel(const float* acc, long lo_in, const bf16* bias, bf16* out, long lo_out, long M) {
  const long n = M * F;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    const long m = i / F;
    const int f = (int)(i % F);
    const int cg = 16 * (f / 8) + f % 8, cu = cg + 8;
    const long ig = m * 2 * F + cg, iu = m * 2 * F + cu;
    const float gv = (lo_in ? acc[ig] + acc[lo_in + ig] : acc[ig]) + bf(bias[cg]);
    const float uv = (lo_in ? acc[iu] + acc[lo_in + iu] : acc[iu]) + bf(bias[cu]);
    const float h = gv / (1.f + __expf(-gv)) * uv;
    if (lo_out) split_store(out, out + lo_out, i, h);
    else out[i] = __float2bfloat16_rn(h);
  }
}

}  // namespace cubeforge::cuda::detail
