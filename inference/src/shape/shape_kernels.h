// fp32 kernels of the shape stage (src/shape): vectorizable exp/GELU/SiLU, the phase-modulated Fourier embedding,
// GEMM-based multi-head attention for many queries (no mask), and the tokenizer's transformer layers
// (self-attention EncoderLayer and cross-attention layer with precomputed keys/values). Single-threaded unless
// noted: the callers parallelise over batches; GEMMs go through cpu::gemm (OpenBLAS on the calling thread, split over
// OpenMP's threads when large and outside a parallel region).
#pragma once
#include <cstddef>
#include <vector>

namespace cubeforge::shape {

// exp with ~1 ulp relative error on [-87, 88] (clamped outside), written so that GCC vectorizes loops over it.
void exp_inplace(float* x, size_t n);
// x ← x·Φ(x) (exact-erf GELU; abs. error of Φ < 2e-7), x ← x·σ(x).
void gelu_inplace(float* x, size_t n);
void silu_inplace(float* x, size_t n);

// Rows of D: y = (x − μ)/√(σ² + eps) (· w + b when non-null); fp32 two-pass statistics. y may alias x.
void layer_norm_rows(const float* x, size_t M, int D, float eps, const float* w, const float* b, float* y);

// C[M,N] (ldc) = alpha · A[M,K] (lda) · B[N,K]ᵀ (ldb) + beta·C
void gemm_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
             int ldc);
// C[M,N] (ldc) = alpha · A[M,K] (lda) · B[K,N] (ldb) + beta·C
void gemm_nn(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
             int ldc);

// y[M,N] = x[M,K]·Wᵀ + b; accumulate adds into y.
void linear(const float* x, size_t M, int K, const float* W, const float* b, int N, float* y, bool accumulate = false);

// Unmasked multi-head attention through sgemm: for each head h, out_h = softmax(scale · q_h k_hᵀ) v_h.
// q rows [Tq] (stride q_stride), k/v rows [Tk] (strides), out rows (out_stride); heads are hd-wide column blocks.
// scratch must hold Tq·Tk floats. parallel_rows: split the softmax over OpenMP threads (for a caller that is
// not itself parallel).
void attention_gemm(const float* q, int q_stride, int Tq, const float* k, int k_stride, const float* v, int v_stride,
                    int Tk, int n_heads, int hd, float scale, float* out, int out_stride, float* scratch,
                    bool parallel_rows = false);

// Phase-modulated Fourier embedding (spec §8.3) of n points: out[n, 3 + 6·nf] =
// [x, y, z, cos f + cos p (axis-major, 3·nf), sin f + sin p (3·nf)], f = x_a·w[a,k], p = x_a·0.5·π + carrier_k.
void fourier_embed(const float* xyz, size_t n, const float* w, const float* carrier, int nf, float* out,
                   size_t out_stride);
// The 128-entry carrier buffer of the reference (PyTorch linspace rules), for nf frequencies.
std::vector<float> fourier_carrier(int nf);

struct SelfAttnWeights {  // OneD EncoderLayer (self-attention with q/k RMSNorm, GELU MLP); LNs not affine
  const float *qk_w, *qk_b, *v_w, *v_b, *proj_w, *proj_b, *q_norm, *k_norm, *up_w, *up_b, *down_w, *down_b;
};
struct CrossAttnWeights {  // EncoderCrossAttentionLayer (no q/k norm, GELU MLP); LNs not affine
  const float *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *proj_w, *proj_b, *up_w, *up_b, *down_w, *down_b;
};

// h[T, W] ← EncoderLayer(h) (spec §8.2). parallel: OpenMP loops (call from a non-parallel region); its GEMMs split
// over the threads unless a cpu::SerialGemmScope is alive.
void self_attn_layer(float* h, int T, int W, int n_heads, float ln_eps, const SelfAttnWeights& L, bool parallel);
// True when a transformer layer over T rows of width W (against Tk keys) is big enough to be worth threading.
bool worth_threading(int T, int W, int Tk);

// Keys/values of a cross-attention layer for a fixed context c[Tc, W]: kv[Tc, 2W] = [c_k(LN(c)) | c_v(LN(c))].
std::vector<float> cross_attn_kv(const float* c, int Tc, int W, float ln_eps, const CrossAttnWeights& L);
// h[T, W] ← h + c_proj(attn(c_q(LN(h)), K, V)); h ← h + MLP(LN(h)). kv from cross_attn_kv. parallel: see attention_gemm.
void cross_attn_layer(float* h, int T, int W, int n_heads, float ln_eps, const CrossAttnWeights& L, const float* kv,
                      int Tc, bool parallel);

}  // namespace cubeforge::shape
