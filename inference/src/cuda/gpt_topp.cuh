// Nucleus (top-p) sampling on the guided logits: threshold by bisection on probability (no sort), seeded
// counter-based draw, then the token's emission; one block of 1024 threads per variation.
#pragma once
#include "gpt/top_p_key.h"
#include "gpt_device.cuh"

namespace cubeforge::cuda::detail {

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
  unsigned long long* tl;  // diagnostics only: timeline stamps (TlStamp) or null
};

constexpr int TOPP_THREADS = 1024, TOPP_PER = 16;  // 16384 logits
__global__ void __launch_bounds__(TOPP_THREADS) topp_kernel(const ToppParams tp) {
  const TlStamp tls(tp.tl);
  const Ctl* ctl = tp.ctl;
  const int pv = blockIdx.x, V = ctl->vocab;
  // Before the wait (written many kernels back): the position and this step's random bits. Variation pv samples
  // with seed + pv, keyed by (seed, step) as the CPU path (sampling.cpp) and the generic kernels do: variation pv of
  // a batch is the single generation of seed + pv.
  const int pos = __ldcg(&tp.dyn->pos);
  const unsigned long long h = topp::draw_bits(ctl->seed + (unsigned long long)pv, pos);
  const float top_p = ctl->top_p;
  pdl_handoff(tls);
  __shared__ float sh[32];
  __shared__ int chosen;
  __shared__ int tok_s[MAXP];
  __shared__ int last;
  float lg[TOPP_PER];
  const int k0 = threadIdx.x * TOPP_PER;
  // A thread's 16 logits as four 16-byte loads (the vocabulary is a multiple of 16: all or none of them exist)
  if (k0 < V) {
    const float4* src = reinterpret_cast<const float4*>(tp.guided + (size_t)pv * V + k0);
#pragma unroll
    for (int i = 0; i < TOPP_PER / 4; ++i) {
      const float4 f = __ldcg(src + i);
      lg[4 * i] = f.x;
      lg[4 * i + 1] = f.y;
      lg[4 * i + 2] = f.z;
      lg[4 * i + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < TOPP_PER; ++i) lg[i] = -INFINITY;
  }
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
  // u in [0, total): the top 24 random bits as an exact float fraction
  const float u = (float)(h >> 40) * (1.f / 16777216.f) * total;
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

}  // namespace cubeforge::cuda::detail
