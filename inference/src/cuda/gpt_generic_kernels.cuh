// Kernels of the generic-width CUDA GPT path (gpt_generic.h): a tiled fp32 GEMM over bf16 weights with fused
// LayerNorm / SwiGLU input transforms and a residual epilogue, q/k RMSNorm + RoPE + KV write, masked attention over
// an fp32 KV cache, and a one-block token choice (CFG, argmax, seeded top-p, teacher forcing, next embedding,
// position advance). Every width is a run-time value. The position lives on the device (GenState::pos), so one
// decode step is the same launch sequence at every position and can be captured once in a CUDA graph.
#pragma once
#include <cfloat>
#include <climits>
#include <cstdint>

#include "cuda_common.cuh"
#include "gpt/top_p_key.h"

namespace cubeforge::cuda::generic {

using detail::bf;
using detail::bf16;
using detail::warp_max;
using detail::warp_sum;

constexpr int kMaxP = 8;              // variations (prompts) per batch
constexpr int kMaxR = 2 * kMaxP;      // rows (cond rows then uncond rows with CFG)
constexpr float kRmsEps = 1e-5f;      // q/k RMSNorm eps (spec §3; not the config's LayerNorm eps)
constexpr int kSelectThreads = 1024;  // token choice: one block

// Written by the host before a generate() or a teacher-forced step; read by the select kernel.
struct GenControl {
  int P;              // variations
  int cfg;            // 1: rows = 2P, guided logits (1 + gamma) cond - gamma uncond
  int N;              // tokens per object (guidance schedule)
  int vocab;          // shape codes: sampled range [0, vocab)
  int forced;         // teacher forcing: feed forced_tok[p] instead of the chosen token
  int topp;           // 1: nucleus sampling, 0: argmax
  double guidance;    // g
  float top_p;
  float pad;
  unsigned long long seed;
  int forced_tok[kMaxP];
};
// Written by kernels.
struct GenState {
  int pos;            // decode step (shape position) of the next step
  int pad[3];
};

// ---- block reduction (max or sum); every thread gets the result ------------------------------------------------------
template <bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = MAX ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < nw ? red[lane] : (MAX ? -FLT_MAX : 0.f);
  return MAX ? warp_max(v) : warp_sum(v);
}

// ---- Linear: C[M,N] (+)= in(A)[M,K] · W[N,K]^T + bias -------------------------------------------------------------
// in(A): A as is (LIN_PLAIN), LayerNorm of each A row without affine (LIN_LN, eps), or SwiGLU of a [gate | up] row
// (LIN_SWIGLU: a[k] = silu(A[m][k]) * A[m][K + k]). fp32 FMA on the bf16 weights (exact in fp32), fp32 accumulate.
enum LinIn { LIN_PLAIN = 0, LIN_LN = 1, LIN_SWIGLU = 2 };
struct LinearArgs {
  const float* A;
  int lda;
  int M, K, N;
  const bf16* W;      // [N][K] row-major (PyTorch Linear layout)
  const bf16* bias;   // [N] or nullptr
  float* C;
  int ldc;
  int accumulate;     // 1: C += y (residual add), 0: C = y
  float eps;
};
// Mean and 1/std (two passes, biased variance as PyTorch) of rows [r0, r0 + rows) of A, one warp per row, into
// mean[] / rstd[] (indexed from 0); rows past M get 0.
__device__ __forceinline__ void ln_row_stats(const LinearArgs& a, int r0, int rows, float* mean, float* rstd) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  for (int r = warp; r < rows; r += nw) {
    const int m = r0 + r;
    float mu = 0.f, rs = 0.f;
    if (m < a.M) {
      const float* x = a.A + (size_t)m * a.lda;
      float s = 0.f;
      for (int k = lane; k < a.K; k += 32) s += x[k];
      mu = warp_sum(s) / (float)a.K;
      float v = 0.f;
      for (int k = lane; k < a.K; k += 32) {
        const float d = x[k] - mu;
        v += d * d;
      }
      rs = rsqrtf(warp_sum(v) / (float)a.K + a.eps);
    }
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}
// in(A)[m][k] for an A row (see LinIn); mean / rstd of that row for LIN_LN.
template <int IN>
__device__ __forceinline__ float lin_input(const float* row, int k, int K, float mean, float rstd) {
  if (IN == LIN_PLAIN) return row[k];
  if (IN == LIN_LN) return (row[k] - mean) * rstd;
  const float g = row[k];
  return g / (1.f + __expf(-g)) * row[K + k];
}

constexpr int LBM = 16, LBN = 32, LBK = 32, LTHREADS = 128;  // 2 x 2 outputs per thread

template <int IN>
__global__ void __launch_bounds__(LTHREADS) linear_kernel(LinearArgs a) {
  __shared__ float As[LBK][LBM + 1];
  __shared__ float Ws[LBK][LBN + 1];
  __shared__ float row_mean[LBM], row_rstd[LBM];
  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * LBM, n0 = blockIdx.x * LBN;
  if (IN == LIN_LN) {
    ln_row_stats(a, m0, LBM, row_mean, row_rstd);
    __syncthreads();
  }
  const int tx = tid % (LBN / 2), ty = tid / (LBN / 2);
  float acc[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
  for (int k0 = 0; k0 < a.K; k0 += LBK) {
    for (int i = tid; i < LBM * LBK; i += LTHREADS) {
      const int r = i / LBK, kk = i % LBK, m = m0 + r, k = k0 + kk;
      As[kk][r] = (m < a.M && k < a.K) ? lin_input<IN>(a.A + (size_t)m * a.lda, k, a.K, row_mean[r], row_rstd[r]) : 0.f;
    }
    for (int i = tid; i < LBN * LBK; i += LTHREADS) {
      const int c = i / LBK, kk = i % LBK, n = n0 + c, k = k0 + kk;
      Ws[kk][c] = (n < a.N && k < a.K) ? bf(a.W[(size_t)n * a.K + k]) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < LBK; ++kk) {
      const float a0 = As[kk][2 * ty], a1 = As[kk][2 * ty + 1];
      const float w0 = Ws[kk][2 * tx], w1 = Ws[kk][2 * tx + 1];
      acc[0][0] = fmaf(a0, w0, acc[0][0]);
      acc[0][1] = fmaf(a0, w1, acc[0][1]);
      acc[1][0] = fmaf(a1, w0, acc[1][0]);
      acc[1][1] = fmaf(a1, w1, acc[1][1]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int m = m0 + 2 * ty + i, n = n0 + 2 * tx + j;
      if (m >= a.M || n >= a.N) continue;
      float y = acc[i][j] + (a.bias ? bf(a.bias[n]) : 0.f);
      float* c = a.C + (size_t)m * a.ldc + n;
      *c = a.accumulate ? *c + y : y;
    }
}

// ---- the same Linear for few rows (decode, M <= kMaxR): one warp per output column ---------------------------------
// The block first writes in(A) for all M rows into shared memory (M x K floats, LayerNorm / SwiGLU applied once), then
// each of its 8 warps takes output columns n = blockIdx.x * 8 + warp + k * gridDim.x * 8: lanes stride K with bf16
// pairs of the weight row, keep M fp32 sums, reduce them across the warp. Fixed order: deterministic.
constexpr int GTHREADS = 256;
template <int IN>
__global__ void __launch_bounds__(GTHREADS) gemv_kernel(LinearArgs a) {
  extern __shared__ float xs[];  // [M][K]
  __shared__ float row_mean[kMaxR], row_rstd[kMaxR];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int M = a.M, K = a.K;
  if (IN == LIN_LN) {
    ln_row_stats(a, 0, M, row_mean, row_rstd);
    __syncthreads();
  }
  for (int i = tid; i < M * K; i += GTHREADS) {
    const int r = i / K;
    xs[i] = lin_input<IN>(a.A + (size_t)r * a.lda, i % K, K, row_mean[r], row_rstd[r]);
  }
  __syncthreads();
  for (int n = blockIdx.x * (GTHREADS / 32) + warp; n < a.N; n += gridDim.x * (GTHREADS / 32)) {
    const __nv_bfloat162* w = reinterpret_cast<const __nv_bfloat162*>(a.W + (size_t)n * K);  // K is even
    float acc[kMaxR];
#pragma unroll
    for (int r = 0; r < kMaxR; ++r) acc[r] = 0.f;
    for (int k2 = lane; k2 < K / 2; k2 += 32) {
      const float2 wf = __bfloat1622float2(w[k2]);
#pragma unroll
      for (int r = 0; r < kMaxR; ++r)
        if (r < M) {
          const float2 x = *reinterpret_cast<const float2*>(xs + (size_t)r * K + 2 * k2);
          acc[r] = fmaf(x.x, wf.x, fmaf(x.y, wf.y, acc[r]));
        }
    }
    const float b = a.bias ? bf(a.bias[n]) : 0.f;
#pragma unroll
    for (int r = 0; r < kMaxR; ++r)
      if (r < M) {
        const float y = warp_sum(acc[r]) + b;
        if (lane == r) {
          float* c = a.C + (size_t)r * a.ldc + n;
          *c = a.accumulate ? *c + y : y;
        }
      }
  }
}

// ---- q/k RMSNorm, RoPE, KV-cache write -----------------------------------------------------------------------------
// One warp per (token m, head h). Token m belongs to cache row m / tpr, token index t = m % tpr. Row layout of qkv:
// [q (D) | k (D) | v (D)] (has_q) or [k (D) | v (D)]. q and k are normalized in place; with rope, q and k are rotated
// by the device position (interleaved pairs, spec §4.3); k and v go to cache slot slot_base + (use_pos ? pos : t).
struct QkArgs {
  float* qkv;
  int ld;
  int has_q;
  int D, hd;
  const float* qn;     // [hd] (has_q)
  const float* kn;     // [hd]
  float* kc;           // [rows][T][D]
  float* vc;
  int T;
  int tpr;
  int slot_base;
  int use_pos;
  int rope;            // rotate by the device position (decode); prefill cond tokens sit at position 0
  const float2* rope_tab;  // [positions][hd / 2] (cos, sin)
  const GenState* st;
};

__device__ __forceinline__ void rms_rope_head(float* x, const float* w, int hd, float eps, const float2* cs, int lane) {
  float ss = 0.f;
  for (int j = lane; j < hd / 2; j += 32) ss += x[2 * j] * x[2 * j] + x[2 * j + 1] * x[2 * j + 1];
  const float r = rsqrtf(warp_sum(ss) / (float)hd + eps);
  for (int j = lane; j < hd / 2; j += 32) {  // each lane owns whole pairs: no exchange between lanes
    const float a = x[2 * j] * r * w[2 * j], b = x[2 * j + 1] * r * w[2 * j + 1];
    if (cs) {
      const float2 c = cs[j];
      x[2 * j] = a * c.x - b * c.y;
      x[2 * j + 1] = a * c.y + b * c.x;
    } else {
      x[2 * j] = a;
      x[2 * j + 1] = b;
    }
  }
}

__global__ void __launch_bounds__(32) qk_prep_kernel(QkArgs a) {
  const int m = blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
  const int r = m / a.tpr, t = m % a.tpr;
  const int pos = a.st->pos;
  const int slot = a.slot_base + (a.use_pos ? pos : t);
  float* row = a.qkv + (size_t)m * a.ld;
  float* k = row + (a.has_q ? a.D : 0) + h * a.hd;
  const float* v = k + a.D;
  const float2* cs = (a.rope && pos > 0) ? a.rope_tab + (size_t)pos * (a.hd / 2) : nullptr;
  if (a.has_q) rms_rope_head(row + h * a.hd, a.qn, a.hd, kRmsEps, cs, lane);
  rms_rope_head(k, a.kn, a.hd, kRmsEps, cs, lane);
  __syncwarp();
  float* kd = a.kc + ((size_t)r * a.T + slot) * a.D + h * a.hd;
  float* vd = a.vc + ((size_t)r * a.T + slot) * a.D + h * a.hd;
  for (int d = lane; d < a.hd; d += 32) {
    kd[d] = k[d];
    vd[d] = v[d];
  }
}

// ---- attention over the first `vis` cache slots of the query's row -------------------------------------------------
// vis = vis_const + vis_pos * pos + vis_t * t: dual decode (s + 1, 1, 0), single decode causal (1, 1, 0), single
// decode reference mode (1, 0, 0: slot 0 only, spec §4.4), cond prefill (1, 0, 1: cond causal among itself).
struct AttnArgs {
  const float* q;
  int ldq;
  const float* kc;
  const float* vc;
  int T, D, hd;
  float scale;
  int tpr;
  int vis_const, vis_pos, vis_t;
  const GenState* st;
  float* out;
  int ldo;
};
constexpr int ATHREADS = 128;

__global__ void __launch_bounds__(ATHREADS) attention_kernel(AttnArgs a) {
  extern __shared__ float sm[];
  float* qs = sm;             // [hd]
  float* sc = sm + a.hd;      // [T], then [4][hd] partial outputs
  __shared__ float red[32];
  const int h = blockIdx.x, m = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int r = m / a.tpr, t = m % a.tpr;
  int vis = a.vis_const + a.vis_pos * a.st->pos + a.vis_t * t;
  vis = min(max(vis, 1), a.T);
  const float* q = a.q + (size_t)m * a.ldq + h * a.hd;
  for (int d = tid; d < a.hd; d += ATHREADS) qs[d] = q[d];
  __syncthreads();
  const float* kbase = a.kc + (size_t)r * a.T * a.D + h * a.hd;
  const float* vbase = a.vc + (size_t)r * a.T * a.D + h * a.hd;
  for (int j = warp; j < vis; j += ATHREADS / 32) {
    const float* kj = kbase + (size_t)j * a.D;
    float dot = 0.f;
    for (int d = lane; d < a.hd; d += 32) dot = fmaf(qs[d], kj[d], dot);
    dot = warp_sum(dot);
    if (lane == 0) sc[j] = dot * a.scale;
  }
  __syncthreads();
  float mx = -FLT_MAX;
  for (int j = tid; j < vis; j += ATHREADS) mx = fmaxf(mx, sc[j]);
  mx = block_reduce<true>(mx, red);
  float sum = 0.f;
  for (int j = tid; j < vis; j += ATHREADS) {
    const float e = __expf(sc[j] - mx);
    sc[j] = e;
    sum += e;
  }
  sum = block_reduce<false>(sum, red);  // its barriers also publish sc[]
  const float inv = 1.f / sum;
  // weighted values: warp w sums keys j = w (mod 4) for 32 dims at a time (coalesced rows), then the 4 partial sums
  float* part = sc + a.T;  // [4][hd]
  for (int d0 = 0; d0 < a.hd; d0 += 32) {
    const int d = d0 + lane;
    float acc = 0.f;
    if (d < a.hd) {
#pragma unroll 4
      for (int j = warp; j < vis; j += ATHREADS / 32) acc = fmaf(sc[j], vbase[(size_t)j * a.D + d], acc);
      part[warp * a.hd + d] = acc;
    }
  }
  __syncthreads();
  for (int d = tid; d < a.hd; d += ATHREADS) {
    float acc = 0.f;
#pragma unroll
    for (int w = 0; w < ATHREADS / 32; ++w) acc += part[w * a.hd + d];
    a.out[(size_t)m * a.ldo + h * a.hd + d] = acc * inv;
  }
}

// ---- start of a generation: every row's x = BOS embedding, position 0 ---------------------------------------------
__global__ void init_rows_kernel(const float* wte, int bos, int R, int D, float* x, GenState* st) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < R * D; i += gridDim.x * blockDim.x)
    x[i] = wte[(size_t)bos * D + i % D];
  if (blockIdx.x == 0 && threadIdx.x == 0) st->pos = 0;
}

// ---- token choice ---------------------------------------------------------------------------------------------------
// Nucleus sampling over g[0..V) as the CPU's sample_top_p (sampling.cpp): sort descending (ties: lower index first),
// keep the longest prefix whose cumulative probability stays <= top_p (at least one token), draw with the counter
// RNG keyed by (seed, step) (variation p: seed + p, as a single generation of that seed). Shared memory: Vp floats +
// Vp ints + (threads + 1) doubles + 2 ints, Vp = next power of two >= V.
__device__ int top_p_pick(const float* g, int V, float top_p, unsigned long long seed, int step, char* smem) {
  const int tid = threadIdx.x, nt = blockDim.x;
  int Vp = 1;
  while (Vp < V) Vp <<= 1;
  float* sv = reinterpret_cast<float*>(smem);
  int* si = reinterpret_cast<int*>(sv + Vp);
  double* scan = reinterpret_cast<double*>(smem + (((size_t)Vp * 8 + 15) & ~size_t(15)));
  int* found = reinterpret_cast<int*>(scan + nt + 1);
  for (int i = tid; i < Vp; i += nt) {
    sv[i] = i < V ? g[i] : -FLT_MAX;
    si[i] = i < V ? i : INT_MAX;
  }
  __syncthreads();
  for (int k = 2; k <= Vp; k <<= 1)  // bitonic sort into "before" order: larger value, then lower index
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = tid; i < Vp; i += nt) {
        const int l = i ^ j;
        if (l <= i) continue;
        const bool l_before_i = sv[l] > sv[i] || (sv[l] == sv[i] && si[l] < si[i]);
        const bool up = (i & k) == 0;
        if (up ? l_before_i : !l_before_i) {
          const float tv = sv[i];
          sv[i] = sv[l];
          sv[l] = tv;
          const int ti = si[i];
          si[i] = si[l];
          si[l] = ti;
        }
      }
      __syncthreads();
    }
  const float mx = sv[0];
  const int chunk = (V + nt - 1) / nt, lo = min(tid * chunk, V), hi = min(lo + chunk, V);
  double local = 0;
  for (int i = lo; i < hi; ++i) {
    sv[i] = expf(sv[i] - mx);
    local += sv[i];
  }
  scan[tid] = local;
  if (tid == 0) found[0] = V, found[1] = INT_MAX;
  __syncthreads();
  if (tid == 0) {  // exclusive prefix over the chunks, total in scan[nt]
    double c = 0;
    for (int i = 0; i < nt; ++i) {
      const double s = scan[i];
      scan[i] = c;
      c += s;
    }
    scan[nt] = c;
  }
  __syncthreads();
  const double total = scan[nt], prefix = scan[tid];
  double cum = prefix;
  for (int i = lo; i < hi; ++i) {  // keep = first rank k >= 1 whose cumulative probability exceeds top_p
    cum += sv[i];
    if (i >= 1 && cum / total > (double)top_p) {
      atomicMin(&found[0], i);
      break;
    }
  }
  __syncthreads();
  const int keep = found[0];
  const unsigned long long rnd = topp::draw_bits(seed, step);
  // kept_sum = sum of the first `keep` weights: the chunk holding rank keep - 1 knows it
  if (keep - 1 >= lo && keep - 1 < hi) {
    double c = prefix;
    for (int i = lo; i < keep; ++i) c += sv[i];
    scan[nt] = c;  // total is no longer needed
  }
  __syncthreads();
  const double u = (double)(rnd >> 11) * (1.0 / 9007199254740992.0) * scan[nt];
  cum = prefix;
  for (int i = lo; i < min(hi, keep); ++i) {
    cum += sv[i];
    if (u < cum) {
      atomicMin(&found[1], i);
      break;
    }
  }
  __syncthreads();
  const int k = found[1] == INT_MAX ? keep - 1 : found[1];
  return si[k];
}

struct SelectArgs {
  const GenControl* ctl;
  GenState* st;
  const float* logits;  // [R][vocab] raw logits of this step
  float* guided;        // [P][vocab]
  const float* wte;     // [V][D] fp32
  int D;
  float* x;             // [R][D]: next step's input embeddings
  int* tokens;          // [P][N] device copy
  int* host_tokens;     // [P][N] mapped pinned host memory
  int* argmax_out;      // [P]: guided argmax of this step (before teacher forcing)
};

// One block of kSelectThreads. Per variation: guided logits (fp32, gamma from the device position), argmax (first
// index on ties), or top-p, or the forced token; token to device + host; next embedding for its cond and uncond
// rows. Then the position advances.
__global__ void __launch_bounds__(kSelectThreads) select_kernel(SelectArgs a) {
  extern __shared__ __align__(16) char smem[];
  __shared__ float red_v[32];
  __shared__ int red_i[32];
  __shared__ int chosen;
  const GenControl& c = *a.ctl;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int pos = a.st->pos, V = c.vocab;
  const double gamma = c.cfg ? c.guidance * (double)(c.N - pos) / (double)c.N : 0.0;
  const float g1 = (float)(1.0 + gamma), gm = (float)gamma;
  for (int p = 0; p < c.P; ++p) {
    const float* lc = a.logits + (size_t)p * V;
    const float* lu = a.logits + (size_t)(c.P + p) * V;
    float* gp = a.guided + (size_t)p * V;
    float best = -FLT_MAX;
    int bi = INT_MAX;
    for (int v = tid; v < V; v += blockDim.x) {
      // two rounded products, then a subtraction (no FMA contraction), as the reference and the CPU path
      const float gv = c.cfg ? __fsub_rn(__fmul_rn(g1, lc[v]), __fmul_rn(gm, lu[v])) : lc[v];
      gp[v] = gv;
      if (gv > best) best = gv, bi = v;  // v increases per thread: first index on ties
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ov > best || (ov == best && oi < bi)) best = ov, bi = oi;
    }
    if (lane == 0) red_v[warp] = best, red_i[warp] = bi;
    __syncthreads();
    if (warp == 0) {
      const int nw = blockDim.x >> 5;
      best = lane < nw ? red_v[lane] : -FLT_MAX;
      bi = lane < nw ? red_i[lane] : INT_MAX;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, best, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > best || (ov == best && oi < bi)) best = ov, bi = oi;
      }
      if (lane == 0) chosen = bi;
    }
    __syncthreads();
    int tok = chosen;
    if (tok < 0 || tok >= V) tok = 0;  // no logit won (all NaN or -inf): a valid token, not a read past wte
    const int amax = tok;
    if (c.forced) {
      tok = c.forced_tok[p];
    } else if (c.topp) {
      tok = top_p_pick(gp, V, c.top_p, c.seed + (unsigned long long)p, pos, smem);
    }
    if (tid == 0) {
      a.tokens[(size_t)p * c.N + pos] = tok;
      reinterpret_cast<volatile int*>(a.host_tokens)[(size_t)p * c.N + pos] = tok;
      a.argmax_out[p] = amax;
    }
    const float* e = a.wte + (size_t)tok * a.D;
    for (int d = tid; d < a.D; d += blockDim.x) {
      a.x[(size_t)p * a.D + d] = e[d];
      if (c.cfg) a.x[(size_t)(c.P + p) * a.D + d] = e[d];  // the unconditional row follows the guided token
    }
    __syncthreads();
  }
  if (tid == 0) a.st->pos = pos + 1;
}

}  // namespace cubeforge::cuda::generic
