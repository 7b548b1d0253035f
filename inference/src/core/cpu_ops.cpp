// fp32 CPU kernels (see cpu_ops.h). GEMM and Linear go through OpenBLAS on one thread per call, split over OpenMP
// threads when large; the rest are simple loops parallelised with OpenMP.
#include "core/cpu_ops.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace cubeforge::cpu {

namespace {
// Products below this many FLOPs run on the calling thread: a hand-off to the pool costs more than it saves.
constexpr double kParallelFlops = 4.0e6;
// GEMVs are bound by memory, not arithmetic: they gain from the pool sooner.
constexpr double kParallelGemvFlops = 2.5e5;
// Up to this many rows, Linear runs one GEMV per row (see linear()).
constexpr int kRowwiseMaxRows = 4;
// Slices of a split product start at multiples of this many columns, so every output element is computed by the same
// kernel path whatever the thread count.
constexpr int kColumnAlign = 64;

thread_local int t_serial_depth = 0;

// OpenBLAS runs on the calling thread only: all parallelism of the CPU path is OpenMP's (one pool). Set once.
void blas_on_calling_thread() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

// Threads to split a product of `flops` over: 1 inside a parallel region, under a SerialGemmScope or when small.
int split_threads(double flops, double min_flops = kParallelFlops) {
  blas_on_calling_thread();
  if (flops < min_flops || t_serial_depth > 0 || omp_in_parallel()) return 1;
  return std::max(1, omp_get_max_threads());
}

// [begin, end) of part p of `parts` over n columns, in kColumnAlign blocks.
std::pair<int, int> column_slice(int n, int parts, int p) {
  const int blocks = (n + kColumnAlign - 1) / kColumnAlign;
  const int per = (blocks + parts - 1) / parts;
  return {std::min(n, p * per * kColumnAlign), std::min(n, (p + 1) * per * kColumnAlign)};
}
}  // namespace

SerialGemmScope::SerialGemmScope(bool active) : active_(active) {
  if (active_) ++t_serial_depth;
}
SerialGemmScope::~SerialGemmScope() {
  if (active_) --t_serial_depth;
}

void gemm(bool b_rows_are_n, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  const auto part = [&](int m0, int m1, int n0, int n1) {
    if (m1 <= m0 || n1 <= n0) return;
    const float* b = b_rows_are_n ? B + size_t(n0) * ldb : B + n0;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, b_rows_are_n ? CblasTrans : CblasNoTrans, m1 - m0, n1 - n0, K, alpha,
                A + size_t(m0) * lda, lda, b, ldb, beta, C + size_t(m0) * ldc + n0, ldc);
  };
  const int threads = split_threads(2.0 * M * N * K);
  if (threads == 1) return part(0, M, 0, N);
  // Split the larger side: by rows each thread packs all of B, by columns all of A.
  const bool by_rows = M >= N;
  const int rows_per = (M + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int p = 0; p < threads; ++p) {
    if (by_rows) {
      part(std::min(M, p * rows_per), std::min(M, (p + 1) * rows_per), 0, N);
    } else {
      const auto [n0, n1] = column_slice(N, threads, p);
      part(0, M, n0, n1);
    }
  }
}

namespace {
// y ← b (or y += b when accumulating) per row; returns the beta the product is then added with.
float fill_bias(int M, int N, const float* b, float* y, bool accumulate) {
  if (!b) return accumulate ? 1.0f : 0.0f;
  for (int i = 0; i < M; ++i) {
    float* yi = y + size_t(i) * N;
    if (accumulate)
      for (int j = 0; j < N; ++j) yi[j] += b[j];
    else
      std::memcpy(yi, b, sizeof(float) * N);
  }
  return 1.0f;
}
}  // namespace

void linear(const float* x, int M, int K, const float* W, const float* b, int N, float* y, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  const float beta = fill_bias(M, N, b, y, accumulate);
  if (M > kRowwiseMaxRows) return gemm(true, M, N, K, 1.0f, x, K, W, K, beta, y, N);
  // A few rows (the GPT decode's guided pair, CLIP's pooled row): one GEMV per row. sgemm packs W first, which at
  // M = 2 costs ~3x two GEMVs (OpenBLAS 0.3.21), and a row's result then does not depend on M. Large GEMVs (the
  // full-size GPT) are split by output columns over the threads.
  const int threads = split_threads(2.0 * M * N * K, kParallelGemvFlops);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int p = 0; p < threads; ++p) {
    const auto [n0, n1] = column_slice(N, threads, p);
    if (n1 <= n0) continue;
    for (int i = 0; i < M; ++i)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n1 - n0, K, 1.0f, W + size_t(n0) * K, K, x + size_t(i) * K, 1, beta,
                  y + size_t(i) * N + n0, 1);
  }
}

void linear_one_gemm(const float* x, int M, int K, const float* W, const float* b, int N, float* y, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  const float beta = fill_bias(M, N, b, y, accumulate);
  gemm(true, M, N, K, 1.0f, x, K, W, K, beta, y, N);
}

void layer_norm(const float* x, int M, int D, float eps, const float* w, const float* b, float* y) {
#pragma omp parallel for if (size_t(M) * D > (1u << 18))
  for (int i = 0; i < M; ++i) {
    const float* xi = x + size_t(i) * D;
    float* yi = y + size_t(i) * D;
    double mean = 0;
    for (int d = 0; d < D; ++d) mean += xi[d];
    mean /= D;
    double var = 0;
    for (int d = 0; d < D; ++d) {
      double t = xi[d] - mean;
      var += t * t;
    }
    var /= D;
    const float m = static_cast<float>(mean);
    const float r = 1.0f / std::sqrt(static_cast<float>(var) + eps);
    for (int d = 0; d < D; ++d) {
      float v = (xi[d] - m) * r;
      if (w) v *= w[d];
      if (b) v += b[d];
      yi[d] = v;
    }
  }
}

void rms_norm_heads(float* x, int M, int row_stride, int n_heads, int hd, const float* w, float eps) {
  for (int i = 0; i < M; ++i)
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + size_t(i) * row_stride + size_t(h) * hd;
      double ss = 0;
      for (int d = 0; d < hd; ++d) ss += double(v[d]) * v[d];
      const float r = 1.0f / std::sqrt(static_cast<float>(ss / hd) + eps);
      for (int d = 0; d < hd; ++d) v[d] = v[d] * r * w[d];
    }
}

void silu_inplace(float* x, size_t n) {
#pragma omp parallel for if (n > 65536)
  for (size_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}
void gelu_erf_inplace(float* x, size_t n) {
#pragma omp parallel for if (n > 65536)
  for (size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}
void quick_gelu_inplace(float* x, size_t n) {
#pragma omp parallel for if (n > 65536)
  for (size_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}
void silu_mul(float* a, const float* b, size_t n) {
#pragma omp parallel for if (n > 65536)
  for (size_t i = 0; i < n; ++i) a[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}
void add_inplace(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

void attention(const float* q, int q_stride, int Tq, const float* k, const float* v, int kv_stride, int n_heads, int hd,
               float scale, const std::function<int(int)>& visible, float* out, int out_stride) {
  int max_vis = 0;
  for (int i = 0; i < Tq; ++i) max_vis = std::max(max_vis, visible(i));
#pragma omp parallel if (size_t(Tq) * n_heads * max_vis * hd > (1u << 20))
  {
    thread_local std::vector<float> s;
    if (s.size() < size_t(std::max(max_vis, 1))) s.resize(std::max(max_vis, 1));
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < Tq; ++i)
      for (int h = 0; h < n_heads; ++h) {
        const float* qi = q + size_t(i) * q_stride + size_t(h) * hd;
        float* oi = out + size_t(i) * out_stride + size_t(h) * hd;
        const int n = visible(i);
        float mx = -INFINITY;
        for (int j = 0; j < n; ++j) {
          const float* kj = k + size_t(j) * kv_stride + size_t(h) * hd;
          float dot = 0;
          for (int d = 0; d < hd; ++d) dot += qi[d] * kj[d];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        float sum = 0;
        for (int j = 0; j < n; ++j) {
          s[j] = std::exp(s[j] - mx);
          sum += s[j];
        }
        const float inv = n > 0 ? 1.0f / sum : 0.0f;
        for (int d = 0; d < hd; ++d) oi[d] = 0;
        for (int j = 0; j < n; ++j) {
          const float* vj = v + size_t(j) * kv_stride + size_t(h) * hd;
          const float p = s[j] * inv;
          for (int d = 0; d < hd; ++d) oi[d] += p * vj[d];
        }
      }
  }
}

void rope_row(float* x, int n_heads, int hd, int pos, const float* inv_freq) {
  if (pos == 0) return;  // angle 0: identity (cos 1, sin 0), bit-exact
  for (int j = 0; j < hd / 2; ++j) {
    const float ang = static_cast<float>(pos) * inv_freq[j];
    const float c = std::cos(ang), s = std::sin(ang);
    for (int h = 0; h < n_heads; ++h) {
      float* p = x + size_t(h) * hd + 2 * j;
      const float a = p[0], b = p[1];
      p[0] = a * c - b * s;
      p[1] = a * s + b * c;
    }
  }
}

void set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
}

}  // namespace cubeforge::cpu
