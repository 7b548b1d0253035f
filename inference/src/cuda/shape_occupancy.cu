// The occupancy decoder over point chunks: its first layer's kernels (per-axis table sums for grid points, Fourier
// features for arbitrary points), the chunked network (run_network and its buffers) and evaluate() at arbitrary points.
#include <algorithm>
#include <atomic>
#include <cstdio>

#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "shape_engine_impl.cuh"
#include "shape_gpu_kernels.cuh"

namespace cubeforge::cuda {
namespace shape_detail {

// h1[p] = bf16(silu(bf16(b_in + T0[i] + T1[j] + T2[k]))) for grid points (the Fourier embedding + first Linear of
// §8.4 is separable per axis). table: [3][Mt][W] fp32; b_in fp32 (bf16-rounded). One thread per 8 outputs.
__global__ void grid_h1_kernel(PointSet ps, size_t count, const float* __restrict__ table, int Mt,
                               const float* __restrict__ b_in, int W, bf16* __restrict__ h1) {
  const int per = W / 8;
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= count * per) return;
  const size_t p = t / per;
  const int c = int(t % per) * 8;
  uint32_t i, j, k;
  ps.ijk(p, i, j, k);
  const float* t0 = table + (size_t(0) * Mt + (i << ps.shift)) * W + c;
  const float* t1 = table + (size_t(1) * Mt + (j << ps.shift)) * W + c;
  const float* t2 = table + (size_t(2) * Mt + (k << ps.shift)) * W + c;
  float y[8];
#pragma unroll
  for (int e = 0; e < 8; e += 4) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(t0 + e)), b = __ldg(reinterpret_cast<const float4*>(t1 + e)),
                 d = __ldg(reinterpret_cast<const float4*>(t2 + e)),
                 bb = __ldg(reinterpret_cast<const float4*>(b_in + c + e));
    y[e] = bb.x + a.x + b.x + d.x;
    y[e + 1] = bb.y + a.y + b.y + d.y;
    y[e + 2] = bb.z + a.z + b.z + d.z;
    y[e + 3] = bb.w + a.w + b.w + d.w;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) y[e] = silu_f(round_bf(y[e]));
  *reinterpret_cast<uint4*>(h1 + p * W + c) = pack8(y);
}

// sin/cos with an explicit reduction to [-pi, pi] (the build uses --use_fast_math, whose __sincosf is only accurate
// near zero); absolute error ~5e-7 for the arguments of the embedder.
__device__ __forceinline__ void sincos_reduced(float x, float* s, float* c) {
  const float n = rintf(x * 0.15915494309189535f);
  float r = __fmaf_rn(-n, 6.28318548202514648f, x);
  r = __fmaf_rn(-n, -1.7484556000744487e-7f, r);
  __sincosf(r, s, c);
}

// Phase-modulated Fourier features (§8.3) of arbitrary points, rounded to bf16: emb[p][0..Fpad), zero beyond F.
__global__ void fourier_kernel(const float* __restrict__ xyz, size_t count, const float* __restrict__ w /*[3][nf]*/,
                               const float* __restrict__ carrier, int nf, int Fpad, bf16* __restrict__ emb) {
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= count * Fpad) return;
  const size_t p = t / Fpad;
  const int c = int(t % Fpad);
  const int half = 3 * nf;
  float v = 0.0f;
  if (c < 3) {
    v = xyz[3 * p + c];
  } else if (c < 3 + 2 * half) {
    const int q = (c - 3) % half, a = q / nf, k = q % nf;
    const float xa = xyz[3 * p + a];
    const float f = __fmul_rn(xa, w[a * nf + k]);
    const float ph = __fadd_rn(__fmul_rn(__fmul_rn(xa, 0.5f), 3.14159265358979323846f), carrier[k]);
    float sf, cf, sp, cp;
    sincos_reduced(f, &sf, &cf);
    sincos_reduced(ph, &sp, &cp);
    v = (c - 3) < half ? cf + cp : sf + sp;
  }
  emb[p * Fpad + c] = __float2bfloat16_rn(v);
}

}  // namespace shape_detail

// ---- network over points ----------------------------------------------------------------------------------------
// Evaluates `count` points: grid points of ps (general == false) or the device xyz array (general == true).
// Results: out[p] (if out; out_local: every chunk writes out[0..n), a scratch) and/or values[flat] + bits (if
// vals). Chunked; cancel polled between chunks.
void CudaShapeEngine::Impl::run_network(const PointSet& ps, size_t count, const float* xyz, float* out, bool out_local,
                                        float* vals, uint32_t* bts, const std::atomic<bool>* cancel, int* chunks) {
  for (size_t c0 = 0; c0 < count; c0 += chunk) {
    if (cancel && cancel->load()) throw Cancelled();
    const size_t n = std::min(chunk, count - c0);
    const long rows = long(round_up(n, 256));  // GEMM rows (padding rows hold stale, finite-or-not junk; unused)
    PointSet p = ps;
    if (p.list) p.list += c0;
    else p.start += uint32_t(c0);
    bf16* A = bufA.as<bf16>();
    bf16* B = bufB.as<bf16>();
    bf16* Qb = bufQ.as<bf16>();
    bf16* U = bufU.as<bf16>();
    if (xyz) {
      fourier_kernel<<<blocks_for(n * Fpad, 256), 256, 0, stream>>>(xyz + 3 * c0, n, embed_w, carrier, nf, Fpad, U);
      CF_CHECK_LAUNCH();
      gemm.run(stream, U, rows, Fpad, in_w, W, in_b, A, Gemm::kBias, false);
      bias_act(stream, A, rows, W, nullptr, kActSilu);
    } else {
      grid_h1_kernel<<<blocks_for(n * (W / 8), 256), 256, 0, stream>>>(p, n, table, Mt, in_b_f, W, A);
      CF_CHECK_LAUNCH();
    }
    gemm.run(stream, A, rows, W, out_w, W, out_b, B, Gemm::kBias, false);  // q0
    ln_bf16(B, A, long(n));
    gemm.run(stream, A, rows, W, q_w, W, q_b, Qb, Gemm::kBias, false);
    attention(Qb, W, long(n), occK, occVt, lat_rows, A, W);
    gemm.run(stream, A, rows, W, oproj_w, W, oproj_b, B, Gemm::kBias, true);  // q0 += c_proj(att)
    ln_bf16(B, A, long(n));
    if (opts.exact_gelu) {
      gemm.run(stream, A, rows, W, oup_w, 4 * W, oup_b, U, Gemm::kBias, false);
      bias_act(stream, U, rows, 4 * W, nullptr, kActGelu);
    } else {
      gemm.run(stream, A, rows, W, oup_w, 4 * W, oup_b, U, Gemm::kGeluBias, false);
    }
    gemm.run(stream, U, rows, 4 * W, odn_w, W, odn_b, B, Gemm::kBias, true);  // q0 += MLP
    head(B, long(n), out ? (out_local ? out : out + c0) : nullptr, p, vals, bts);
    if (chunks) ++*chunks;
  }
}

void CudaShapeEngine::Impl::ensure_chunk_buffers() {
  for (DevBuf* b : {&bufA, &bufB, &bufQ, &bufU, &bufOut, &bufXyz}) track(*b);
  while (true) {
    try {
      bufA.ensure(chunk * W * 2);
      bufB.ensure(chunk * W * 2);
      bufQ.ensure(chunk * W * 2);
      bufU.ensure(chunk * std::max(4 * W, Fpad) * 2);
      bufOut.ensure(chunk * 4);
      bufXyz.ensure(chunk * 12);
      for (DevBuf* b : {&bufA, &bufB, &bufQ, &bufU}) CF_CUDA(cudaMemset(b->p, 0, b->bytes));
      return;
    } catch (const DeviceOom& e) {
      for (DevBuf* b : {&bufA, &bufB, &bufQ, &bufU, &bufOut, &bufXyz}) b->release();
      if (chunk <= 4096) throw;
      chunk = std::max<size_t>(4096, round_up(chunk / 2, 256));
      std::fprintf(stderr, "%s; network chunk reduced to %zu points\n", e.what(), chunk);
    }
  }
}

// ---- occupancy ----------------------------------------------------------------------------------------------------

void CudaShapeEngine::evaluate(const float* xyz, size_t n, float* out) {
  Impl& m = *impl_;
  if (!m.have_shape) throw Error("CUDA shape: no latents bound (decode_tokens or set_latents first)");
  for (size_t c0 = 0; c0 < n; c0 += m.chunk) {
    const size_t k = std::min(m.chunk, n - c0);
    CF_CUDA(cudaMemcpyAsync(m.bufXyz.p, xyz + 3 * c0, k * 12, cudaMemcpyHostToDevice, m.stream));
    m.run_network(PointSet{}, k, m.bufXyz.as<float>(), m.bufOut.as<float>(), true, nullptr, nullptr, nullptr,
                  nullptr);
    CF_CUDA(cudaMemcpyAsync(out + c0, m.bufOut.p, k * 4, cudaMemcpyDeviceToHost, m.stream));
    CF_CUDA(cudaStreamSynchronize(m.stream));
  }
}

}  // namespace cubeforge::cuda
