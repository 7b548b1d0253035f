// fp32 CPU kernels (see cpu_ops.h). Linear goes through OpenBLAS; the rest are simple loops parallelised with OpenMP.
#include "core/cpu_ops.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace cubeforge::cpu {

namespace {
// OpenBLAS threading pays only for large products: waking its threads costs tens of microseconds (far more on a
// loaded machine), so small GEMMs/GEMVs run on one thread. The switch is global; the CPU path runs one
// inference at a time per process, and the switch is only flipped when the size class changes.
std::atomic<int> g_blas_threads{0};  // configured count (0: not set yet → all cores)
std::atomic<int> g_blas_current{-1};
void blas_threads_for(double flops) {
  int conf = g_blas_threads.load(std::memory_order_relaxed);
  if (conf <= 0) conf = omp_get_num_procs();
  const int want = flops < 4.0e6 ? 1 : conf;
  if (g_blas_current.exchange(want, std::memory_order_relaxed) != want) openblas_set_num_threads(want);
}
}  // namespace

void linear(const float* x, int M, int K, const float* W, const float* b, int N, float* y, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  float beta = 0.0f;
  if (accumulate) {
    beta = 1.0f;
  }
  if (b) {
    if (accumulate) {
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) y[size_t(i) * N + j] += b[j];
    } else {
      for (int i = 0; i < M; ++i) std::memcpy(y + size_t(i) * N, b, sizeof(float) * N);
    }
    beta = 1.0f;
  }
  blas_threads_for(2.0 * M * N * K);
  if (M == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, W, K, x, 1, beta, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, W, K, beta, y, N);
  }
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
  g_blas_threads.store(n);
  g_blas_current.store(-1);
}

}  // namespace cubeforge::cpu
