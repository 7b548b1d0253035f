// fp32 CPU kernels shared by the CLIP tower, the GPT and the shape decoder: GEMM and Linear (OpenBLAS),
// LayerNorm, per-head RMSNorm, activations and prefix-masked multi-head attention. Row-major everywhere:
// an activation matrix [T, C] has row stride C unless a stride is given.
#pragma once
#include <cstddef>
#include <functional>

namespace cubeforge::cpu {

// Threads: every CPU kernel here uses OpenMP's pool; OpenBLAS runs on the calling thread only. With OpenBLAS's own
// pthreads beside OpenMP's, each pool's spinning workers starved the other on small machines (the default model's
// prefill took 80 ms instead of 15 on 2 cores).

// C[M,N] = alpha·A[M,K]·op(B) + beta·C, row-major with leading dimensions: op(B) = Bᵀ when `b_rows_are_n` (B is
// [N,K], the Linear layout), else B ([K,N]). Large products are split over the OpenMP threads (by rows of C when
// M >= N, else by columns) unless called inside a parallel region or a SerialGemmScope.
void gemm(bool b_rows_are_n, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc);

// While alive (and `active`), gemm() and linear() on this thread stay on it: for layers too small to gain from the
// hand-offs (the shape stage's worth_threading).
class SerialGemmScope {
 public:
  explicit SerialGemmScope(bool active);
  ~SerialGemmScope();
  SerialGemmScope(const SerialGemmScope&) = delete;
  SerialGemmScope& operator=(const SerialGemmScope&) = delete;

 private:
  bool active_;
};

// y[M,N] = x[M,K] · W[N,K]ᵀ + b (PyTorch Linear layout). `accumulate` adds into y instead of overwriting. Up to 4 rows
// run as one GEMV per row, so a row's result does not depend on how many rows come with it.
void linear(const float* x, int M, int K, const float* W, const float* b, int N, float* y, bool accumulate = false);
// The same product always through gemm(), whatever M: the shape stage's path, so that a point's occupancy takes the
// same arithmetic in a chunk of 3 points as in one of 4096 (never the per-row GEMVs above).
void linear_one_gemm(const float* x, int M, int K, const float* W, const float* b, int N, float* y,
                     bool accumulate = false);

// y = (x − μ)/√(σ² + eps) (· w + b when given), biased variance, per row of D. y may alias x.
void layer_norm(const float* x, int M, int D, float eps, const float* w, const float* b, float* y);

// In place: each of the M·n_heads vectors of length hd (row stride = row_stride) ← x·rsqrt(mean(x²)+eps)·w.
void rms_norm_heads(float* x, int M, int row_stride, int n_heads, int hd, const float* w, float eps);

void silu_inplace(float* x, size_t n);
void gelu_erf_inplace(float* x, size_t n);
void quick_gelu_inplace(float* x, size_t n);
// a ← silu(a) ⊙ b
void silu_mul(float* a, const float* b, size_t n);
void add_inplace(float* y, const float* x, size_t n);

// Multi-head attention with a prefix mask: query i sees keys [0, visible(i)). q/k/v/out rows hold all heads
// (feature h·hd + d); strides are in floats. scale multiplies q·k.
void attention(const float* q, int q_stride, int Tq, const float* k, const float* v, int kv_stride, int n_heads, int hd,
               float scale, const std::function<int(int)>& visible, float* out, int out_stride);

// Interleaved RoPE (pairs 2j, 2j+1) on n_heads heads of one row at integer position pos, inv_freq[hd/2].
void rope_row(float* x, int n_heads, int hd, int pos, const float* inv_freq);

// Number of worker threads the CPU path uses (OpenMP's pool); 0 = all cores.
void set_num_threads(int n);

}  // namespace cubeforge::cpu
