// Kernels outside the decode step: step-0 row initialisation, the load-time fp32 -> bf16 conversion (blocked layout,
// gate/up interleave) and the cond-stream prefill's LayerNorm / q-k norm + RoPE + KV write / attention / residual /
// SwiGLU kernels around its cuBLAS GEMMs, and the copy of shared prefill rows.
#pragma once
#include "gpt_device.cuh"

namespace cubeforge::cuda::detail {

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

// Shared prefill (prefill_rows.h): copies the cond slots 0..s-1 of cache row `src` to rows dst0 .. dst0 + gridDim.z - 1
// in every layer, keys and values. grid (L, H, rows to fill), 256 threads; layers `lstride` elements apart, rows
// H * T * HD. A row's slots are s * HD contiguous bf16 (256-byte aligned), copied 16 bytes at a time.
__global__ void __launch_bounds__(256) cond_rows_copy_kernel(bf16* kc, bf16* vc, size_t lstride, int T, int s, int src,
                                                             int dst0) {
  const size_t layer = (size_t)blockIdx.x * lstride, h = blockIdx.y;
  const size_t from = layer + ((size_t)src * H + h) * T * HD;
  const size_t to = layer + ((dst0 + blockIdx.z) * (size_t)H + h) * T * HD;
  const int n = s * HD / 8;  // uint4 words
  const uint4 *ks = reinterpret_cast<const uint4*>(kc + from), *vs = reinterpret_cast<const uint4*>(vc + from);
  uint4 *kd = reinterpret_cast<uint4*>(kc + to), *vd = reinterpret_cast<uint4*>(vc + to);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    kd[i] = ks[i];
    vd[i] = vs[i];
  }
}

}  // namespace cubeforge::cuda::detail
