// The decode GEMVs on tensor cores: parameters, the LN prologue and input staging, the cross-warp reduction, the
// epilogues (qkv, residual add + LN stats, SwiGLU, lm_head with guidance + argmax tail), the persistent kernel
// (gemv_kernel) and the one-round kernel (gemv1_kernel). docs/cuda-gpt.md ("Design", "GEMV") explains the choices.
#pragma once
#include "gpt_device.cuh"

namespace cubeforge::cuda::detail {

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
  HashLog hl;                // diagnostics only (CF_DIAG_HASH): this kernel's output hashes
  int early_trig;            // 1: launch the successor before this kernel's own wait (pdl_early_trigger)
  unsigned long long* ph;    // diagnostics only (CF_DIAG_PHASES): per-block stamps [grid][GEMV_PH] or null
};
// One-round GEMV phase stamps (session 24; built with -DCF_DIAG_PHASES, set by the host for the qkv after the stamped
// MLP; compiled out otherwise): per block %globaltimer at entry, wait returned, input staged (the LN prologue; session
// 25), MMAs done (its weights had landed), end, and its SM (word GEMV_PH_SM), so the host can tell the blocks beside
// an MLP reducer from the others.
constexpr int GEMV_PH_SM = 5, GEMV_PH = 6;
__device__ __forceinline__ void gemv_phase(const GemvParams& p, int i) {
#ifdef CF_DIAG_PHASES
  if (p.ph && threadIdx.x == 0) p.ph[(size_t)blockIdx.x * GEMV_PH + i] = i == GEMV_PH_SM ? smid() : gtimer();
#else
  (void)p;
  (void)i;
#endif
}

// The guidance weights of step pos (gamma_i = g (N - i) / N, computed in double): guided = g1 cond - gm uncond.
__device__ __forceinline__ void guidance_weights(const Ctl* ctl, int pos, float& g1, float& gm) {
  const double gd = ctl->guidance * (double)(ctl->N - pos) / (double)ctl->N;
  g1 = (float)(1.0 + gd);
  gm = (float)gd;
}

// The lm_head's logits of NT vocabulary columns from n0 (outs[16][NT]: cond rows, then uncond rows) turned into the
// guided logits of each variation in place (outs[pp][.], -inf past the vocabulary), the raw and guided logits
// written out where the host asked for them; all nthr threads, barriers included.
template <int NT>
__device__ __forceinline__ void lm_head_guide(const GemvParams& p, float* outs, int n0, int pos, int P, int nthr) {
  const Ctl* ctl = p.ctl;
  const int cfg = ctl->cfg, V = ctl->vocab, R = p.R;
  float g1, gm;
  guidance_weights(ctl, pos, g1, gm);
  if (ctl->write_raw)
    for (int e = threadIdx.x; e < R * NT; e += nthr) {
      const int r = e / NT, c = e % NT, col = n0 + c;
      if (col < V) p.raw[(size_t)r * V + col] = outs[r * NT + c];
    }
  __syncthreads();
  for (int e = threadIdx.x; e < P * NT; e += nthr) {
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
}

// The lm_head tail, run by all nthr threads of a block once its argmax partials (p.lm_val / p.lm_idx, nparts per
// variation) are written: the last block to arrive picks each variation's token (argmax over the partials, or the
// forced token), emits it (next embedding + stats + token outputs) and advances the position. flag: 1 + MAXP ints
// of shared memory.
__device__ __forceinline__ void lm_head_tail(const GemvParams& p, int* flag, int nparts, int pos, int P, int nthr) {
  const Ctl* ctl = p.ctl;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // One fence by one thread after the barrier (the cooperative-groups grid-sync pattern: the barrier orders the
  // block's partial writes before thread 0's fence, which is cumulative), instead of a fence in every thread.
  __syncthreads();
  if (threadIdx.x == 0) {
    const bool last = arrive(&p.dyn->cnt_lm) == (unsigned)nparts - 1;
    if (last) arrival_acquire();
    *flag = last;
  }
  __syncthreads();
  if (!*flag) return;  // every block has published its partial: pick, emit, advance the position
  int* tok = flag + 1;
  if (warp < P) {
    int bi = warp_argmax_partials(p.lm_val + warp * nparts, p.lm_idx + warp * nparts, nparts);
    if (bi < 0 || bi >= ctl->vocab) bi = 0;  // no partial won (NaN logits): a valid token instead of a wild read
    if (lane == 0) tok[warp] = ctl->forced ? ctl->forced_tok[warp] : bi;
  }
  __syncthreads();
  if (threadIdx.x < 32) {  // output hash (diagnostics): the tokens
    unsigned hh = 0;
    if (lane < P) hash_add(hh, (unsigned)tok[lane], lane);
    hash_flush(p.hl, hh, pos);
  }
  emit_tokens(tok, 0, P, ctl, pos, p.wte, p.x_next, p.stats_next, p.tokens, p.host_tokens, nthr);
  __syncthreads();
  if (threadIdx.x == 0) {
    p.dyn->cnt_lm = 0;
    p.dyn->pos = pos + 1;
  }
}

// CF_QKV_ONEPASS (measurement builds): 0 = the one-prompt qkv's items one after the other (sessions 11-24)
#ifndef CF_QKV_ONEPASS
#define CF_QKV_ONEPASS 1
#endif
// CF_BIAS_PRE (measurement builds): bit 0 the qkv, bit 1 the residual GEMVs (o-proj, down-proj); default both.
#ifndef CF_BIAS_PRE
#define CF_BIAS_PRE 3
#endif
template <int EPI>
constexpr bool gemv_has_bias_pre = (EPI == EPI_QKV && (CF_BIAS_PRE & 1)) || (EPI == EPI_RESID && (CF_BIAS_PRE & 2));
// The bias element gemv_epilogue's thread e = threadIdx.x adds to column n0 + e % NT (have_b): EPI_QKV and EPI_RESID
// kernels whose R * NT outputs are one per thread request it before griddepcontrol.wait (session 25).
template <int NT, int EPI>
__device__ __forceinline__ float gemv_bias_pre(const GemvParams& p, int n0) {
  const int col = n0 + (int)threadIdx.x % NT;
  if ((int)threadIdx.x >= p.R * NT || col >= p.N) return 0.f;
  if constexpr (EPI == EPI_QKV) return col >= p.bias_from ? bf(p.bias[col - p.bias_from]) : 0.f;
  return bf(p.bias[col]);
}
// have_pre: EPI_RESID's residual (and add2) element of this thread (e = threadIdx.x, R * NT <= threads) was read
// before the MMA loop into xpre / apre (same values; one L2 round trip less after the reduction).
// have_b (EPI_QKV, EPI_RESID; session 25): this thread's bias element (of column n0 + threadIdx.x % NT; 0 where the
// column has none) was read before griddepcontrol.wait into bpre: biases are weights, and the load after the
// reduction was an L2 round trip between the MMAs and the output.
// GEMV epilogues on the reduced tile outs[16][NT] (rows x outputs n0..n0+NT-1), run by the NW * 32 compute threads.
template <int NTILE, int NW, int EPI>
__device__ __forceinline__ void gemv_epilogue(const GemvParams& p, float* outs, int* flag, int n0, int tile,
                                              int total, float xpre = 0.f, float apre = 0.f, bool have_pre = false,
                                              float bpre = 0.f, bool have_b = false) {
  constexpr int NT = 8 * NTILE;
  const int R = p.R;
  unsigned hh = 0;  // output hash (diagnostics, CF_DIAG_HASH)
  // ---- epilogues ----
  if constexpr (EPI == EPI_QKV) {
    for (int e = threadIdx.x; e < R * NT; e += NW * 32) {
      const int r = e / NT, c = e % NT, col = n0 + c;
      if (col >= p.N) continue;
      float v = outs[r * NT + c];
      if (col >= p.bias_from) v += have_b ? bpre : bf(p.bias[col - p.bias_from]);
      p.out_f[(size_t)r * p.ld_out + col] = v;
      hash_addf(hh, v, r * p.ld_out + col);
    }
    hash_flush(p.hl, hh);
  } else if constexpr (EPI == EPI_RESID) {
    for (int e = threadIdx.x; e < R * NT; e += NW * 32) {
      const int r = e / NT, c = e % NT, col = n0 + c;
      const float y = outs[r * NT + c] + (have_b ? bpre : bf(p.bias[col]));
      float x = have_pre ? xpre : __ldcg(p.resid + (size_t)r * D + col);
      x = x + y;
      if (p.add2) x = x + (have_pre ? apre : __ldcg(p.add2 + (size_t)r * D + col));
      p.resid[(size_t)r * D + col] = x;
      if (p.save_y) p.save_y[(size_t)r * D + col] = y;
      outs[r * NT + c] = x;
      hash_addf(hh, x, r * D + col);
    }
    hash_flush(p.hl, hh);
    __syncthreads();
    for (int e = threadIdx.x; e < R * NTILE; e += NW * 32) {
      const int r = e / NTILE, tt = e % NTILE;
      reinterpret_cast<float2*>(p.stats_out)[(size_t)r * NSLOT + n0 / 8 + tt] = ln_stats8(outs + r * NT + tt * 8);
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
      hash_addf(hh, sg * uv, r * p.ld_out + n0 / 2 + j);
    }
    hash_flush(p.hl, hh);
  } else if constexpr (EPI == EPI_LMHEAD) {
    const Ctl* ctl = p.ctl;
    const int P = ctl->P;
    const int pos = __ldcg(&p.dyn->pos);
    lm_head_guide<NT>(p, outs, n0, pos, P, NW * 32);
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
    if (p.tail && publish) lm_head_tail(p, flag, nparts, pos, P, NW * 32);
  }
}

// LN prologue of a GEMV: per-row mean / rstd from the producer's per-8-column partial sums (fp64), then the
// normalised rows of X as bf16 hi rows [R][AST] followed by lo rows [R][AST] in shared memory (act).
// Session 6: every thread requests its first G items of X (8 columns each) before the row statistics and the
// rest G at a time, so the stats and X round trips to L2 overlap and the X loads are batched.
template <int K, int NW, int G>
__device__ __forceinline__ void gemv_ln_prologue(const GemvParams& p, bf16* act, float2* st, int R,
                                                 float* xs = nullptr) {
  constexpr int AST = K + 32, NTHR = NW * 32, K8 = K / 8;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n = R * K8;
  // xs (session 18): the rows are copied whole into shared memory by cp.async first (no registers held, all of them
  // in flight at once), so the prologue is one L2 round trip where G items per thread would need several rounds.
  if (xs) {
    for (int v = threadIdx.x; v < R * (K / 4); v += NTHR) {
      const int r = v / (K / 4), c4 = (v % (K / 4)) * 4;
      cp_async16(xs + (size_t)r * K + c4, p.X + (size_t)r * D + c4);
    }
    cp_async_commit();
  }
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
  if (!xs) issue(threadIdx.x);
  for (int r = warp; r < R; r += NW) {
    if (!p.stats) {  // DIAGNOSTIC (timing only, wrong outputs): no row statistics
      if (lane == 0) st[r] = make_float2(0.f, 1.f);
      continue;
    }
    // Session 20: the lane's 6 slots are requested together, then summed in slot order (the former runtime loop
    // waited for its first two loads before it issued the other four: two L2 round trips instead of one)
    constexpr int SPL = NSLOT / 32;
    static_assert(NSLOT % 32 == 0, "slots per lane");
    float2 v[SPL];
#pragma unroll
    for (int i = 0; i < SPL; ++i) v[i] = __ldcg(reinterpret_cast<const float2*>(p.stats) + r * NSLOT + lane + 32 * i);
    double s = 0.0, q = 0.0;
#pragma unroll
    for (int i = 0; i < SPL; ++i) {
      s += v[i].x;
      q += v[i].y;
    }
    s = warp_sum_d(s);
    q = warp_sum_d(q);
    if (lane == 0) {
      // session 31: products with 1/D and rsqrt (1 ulp in fp64) instead of fp64 divisions and a square root, the
      // slowest part of this chain on the qkv's path; rounded to float they equal the divisions' results unless the
      // fp64 value falls within that error of a float rounding boundary (cuda-check's digests were unchanged)
      constexpr double inv_d = 1.0 / D;
      const double mean = s * inv_d;
      double var = q * inv_d - mean * mean;
      if (var < 0.0) var = 0.0;
      st[r] = make_float2((float)mean, (float)rsqrt(var + (double)p.eps));
    }
  }
  if (xs) {
    cp_async_wait<0>();
    __syncthreads();
    for (int v = threadIdx.x; v < n; v += NTHR) {
      const float* src = xs + (size_t)(v / K8) * K + (v % K8) * 8;
      put(v, *reinterpret_cast<const float4*>(src), *reinterpret_cast<const float4*>(src + 4));
    }
    return;
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

// gemv_reduce for n <= MAXT items at once (R <= 8 rows; session 25): every item's partials written, one barrier,
// the sums of all items, one barrier, where gemv_reduce per item pays two barriers each. Same sums in the same
// order per output. red: MAXT * NW * NTILE * 128 floats; warp w writes item j's partials at chunk (j NW + w) * 512 B.
template <int NTILE, int NW, int MAXT>
__device__ __forceinline__ void gemv_reduce_items(float (&acc)[MAXT][NTILE][4], bool split, int n, float* red,
                                                  float* outs) {
  constexpr int NT = 8 * NTILE;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < MAXT; ++j) {
    if (j >= n) break;
#pragma unroll
    for (int tt = 0; tt < NTILE; ++tt) {
      if (split) {
        acc[j][tt][0] += acc[j][tt][2];
        acc[j][tt][1] += acc[j][tt][3];
        acc[j][tt][2] = acc[j][tt][3] = 0.f;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) red[(((j * NW + warp) * NTILE + tt) * 4 + i) * 32 + lane] = acc[j][tt][i];
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < n * NTILE * 128; e += NW * 32) {
    const int j = e / (NTILE * 128), tt = (e >> 7) % NTILE, i = (e >> 5) & 3, l = e & 31;
    float s = 0.f;
#pragma unroll
    for (int ww = 0; ww < NW; ++ww) s += red[(((j * NW + ww) * NTILE + tt) * 4 + i) * 32 + l];
    const int row = (l >> 2) + ((i & 2) ? 8 : 0), col = tt * 8 + (l & 3) * 2 + (i & 1);
    outs[j * 16 * NT + row * NT + col] = s;
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

// Whether an LN GEMV's prologue stages its input rows in shared memory (gemv_ln_prologue's xs): when G items of 8
// columns per thread do not cover R rows in one round (one-round GEMVs only, gemv_stage_input's STAGE). Its R * K
// floats follow the row stats (host side: Gemv1::smem).
template <int K>
__host__ __device__ constexpr bool gemv_ln_staged(int R, int G, int nthr) {
  return R * (K / 8) > G * nthr;
}

// A GEMV's input in shared memory (hi rows [R][K + 32], then lo rows), followed by a block barrier: the LN prologue
// of the residual stream (LN GEMVs) or the staged non-LN input, columns [k0, k1) (p.act_smem), or nothing. Returns
// the byte offset where the GEMV's other shared arrays start.
template <int K, int NW, bool LN, int G, bool STAGE = false>
__device__ __forceinline__ size_t gemv_stage_input(const GemvParams& p, unsigned char* smem, int R, int k0, int k1) {
  constexpr int AST = K + 32;
  size_t off = 0;
  if constexpr (LN) {
    off = ((size_t)2 * R * AST * 2 + 15) & ~size_t(15);
    float2* st = reinterpret_cast<float2*>(smem + off);
    off += 16 * sizeof(float2);
    // more rows than G items per thread cover in one round: the rows staged whole (gemv_ln_staged; host side:
    // Gemv1::smem)
    float* xs = nullptr;
    if (STAGE && gemv_ln_staged<K>(R, G, NW * 32)) {
      xs = reinterpret_cast<float*>(smem + off);
      off += (size_t)R * K * 4;
    }
    gemv_ln_prologue<K, NW, G>(p, reinterpret_cast<bf16*>(smem), st, R, xs);
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
  pdl_early_trigger(p.early_trig);
  gemv_load_w<K, NTILE, NW, KSPLIT>(wa, p.W, p.N, t, warp, g, t4, pol, p.blocked, p.wmask);
  if constexpr (PIPE == 1)
    if (t + (int)gridDim.x < total)
      gemv_load_w<K, NTILE, NW, KSPLIT>(wb, p.W, p.N, t + gridDim.x, warp, g, t4, pol, p.blocked, p.wmask);
  constexpr bool HB = gemv_has_bias_pre<EPI>;
  const bool have_b = HB && p.R * NT <= NW * 32;
  float bpre0 = 0.f;  // the first tile's bias element (gemv_bias_pre), with the weights
  if constexpr (HB)
    if (have_b) bpre0 = gemv_bias_pre<NT, EPI>(p, (t / KSPLIT) * NT);
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
    float bpre = 0.f;  // later tiles' bias elements: requested here, before the MMAs
    if constexpr (HB)
      if (have_b) bpre = tile_id == (int)blockIdx.x ? bpre0 : gemv_bias_pre<NT, EPI>(p, n0);
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

    gemv_epilogue<NTILE, NW, EPI>(p, outs, flag, n0, tile, total, xpre, apre, have_pre, bpre, have_b);
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
  gemv_phase(p, 0);

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
  // the items' bias elements (gemv_bias_pre), with the weights. Not in the 3-8 row qkv (three register items, NSM 0):
  // there it took 122 -> 125 registers and measured batch 4 +0.2% / +0.5% against the o-proj's alone (session 25)
  constexpr bool HB = gemv_has_bias_pre<EPI> && (EPI != EPI_QKV || NSM > 0);
  const bool have_b = HB && p.R * NT <= NW * 32;
  float bpre[MAXT];
#pragma unroll
  for (int j = 0; j < MAXT; ++j) {
    bpre[j] = 0.f;
    if constexpr (HB)
      if (have_b && (int)blockIdx.x + j * G < total)
        bpre[j] = gemv_bias_pre<NT, EPI>(p, ((blockIdx.x + j * G) / KSPLIT) * NT);
  }
  pdl_handoff(tls);
  gemv_phase(p, 1);

  const int R = p.R;
  const bf16* act = reinterpret_cast<const bf16*>(smem);
  const int ks = (int)blockIdx.x % KSPLIT, kbase = ks * KS;
  // NSM > 0: LN input items one at a time (fewer live registers next to the two weight sets)
  // the input rows staged in shared memory where they take more than one round (3-8 rows, qkv: session 18, batch 4
  // -1.2% / -0.5%); not in the NSM kernels (one prompt: +9 registers and +0.8% / +1.6% TPOT when staged there)
  const size_t off = gemv_stage_input<K, NW, LN, (NSM > 0 ? 1 : 2), NSM == 0>(p, smem, R, kbase, kbase + KS);
  gemv_phase(p, 2);
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
  if constexpr (NSM > 0 && NTILE == 1 && CF_QKV_ONEPASS) {
    // the one-prompt qkv (session 25): all items' MMAs in one pass over the input (one activation fragment per chunk
    // for all items, independent accumulator chains), then gemv_reduce_items. Its partials go into the shared-memory
    // item's space: warp w's partials of item j land on chunk j NW + w, which only warp w read (its chunks are
    // c NW + w) and whose values it has consumed, so no barrier is needed before the writes. Same sums per item.
    static_assert(NSM == 1 && MAXT * NW * NTILE * 128 * 4 <= NSM * CPW * NTILE * NTHR * 16 && CPW >= MAXT,
                  "partials fit in the shared-memory item");
    float acc[MAXT][NTILE][4] = {};
    const bool has_sm = (int)blockIdx.x + NR * G < total;  // block-uniform
    if (has_sm) mbar_wait(wbar, 0);
#pragma unroll
    for (int c = 0; c < CPW; ++c) {
      uint4 a0, a1;
      gemv_act8<K>(p, act, act_s, R, g, kbase + (c * NW + warp) * 32 + t4 * 8, split, a0, a1);
#pragma unroll
      for (int j = 0; j < NR; ++j) mma_chunk(acc[j][0], a0, a1, w[j][c][0]);
      if (has_sm) mma_chunk(acc[NR][0], a0, a1, ws[((size_t)c * NW + warp) * 32 + lane]);
    }
    for (int j = 0; j < MAXT; ++j)
      if ((int)blockIdx.x + j * G < total) nmine = j + 1;
    gemv_reduce_items<NTILE, NW, MAXT>(acc, split, nmine, reinterpret_cast<float*>(ws), outs);
  } else if constexpr (NSM > 0) {
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

  gemv_phase(p, 3);
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
                                     have_pre, bpre[j], have_b);
  }
  gemv_phase(p, 4);
  gemv_phase(p, GEMV_PH_SM);
}

}  // namespace cubeforge::cuda::detail
