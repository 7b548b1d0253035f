// fp32 kernels of the shape stage (see shape_kernels.h): vectorizable transcendental loops, Fourier embedding,
// sgemm-based attention and the OneDAutoEncoder transformer layers.
#include "shape/shape_kernels.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/cpu_ops.h"

namespace cubeforge::shape {

bool worth_threading(int T, int W, int Tk) {
  // ≈ FLOPs of one layer: projections + MLP (12·W² per row) and attention (4·Tk·W per row).
  const double flops = 2.0 * T * (12.0 * W * double(W)) + 4.0 * T * double(Tk) * W;
  return flops > 4e8;
}

namespace {

inline float bits_to_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}

// Cephes-style expf: 2^n · P(r), r = x − n·ln2 (two-part ln2), degree-6 polynomial. Branch-free.
inline float exp_approx(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float magic = 12582912.0f;  // 1.5·2^23: adding and subtracting rounds to the nearest integer
  float n = (x * 1.44269504088896341f + magic) - magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  return p * bits_to_float((static_cast<int32_t>(n) + 127) << 23);
}

// x·Φ(x) with Φ(x) = ½·erfc(−x/√2); erfc by the Chebyshev fit of Numerical Recipes (fractional error < 1.2e-7).
inline float gelu_approx(float x) {
  const float z = std::fabs(x) * 0.70710678118654752f;
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float ec = t * exp_approx(p - z * z);  // erfc(|x|/√2)
  const float phi = x >= 0.0f ? 1.0f - 0.5f * ec : 0.5f * ec;
  return x * phi;
}

}  // namespace

#if defined(__AVX2__) && defined(__FMA__)
#define CF_SHAPE_AVX2 1
#endif

#ifdef CF_SHAPE_AVX2
namespace {

// 8-lane versions of exp_approx / gelu_approx (same constants, same operation order up to FMA contraction).
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline __m256 gelu8(__m256 x) {
  const __m256 z = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(0.70710678118654752f));
  const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z, _mm256_set1_ps(1.0f)));
  __m256 p = _mm256_set1_ps(0.17087277f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
  const __m256 half_ec = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_mul_ps(t, exp8(_mm256_fnmadd_ps(z, z, p))));
  const __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ);
  const __m256 phi = _mm256_blendv_ps(half_ec, _mm256_sub_ps(_mm256_set1_ps(1.0f), half_ec), pos);
  return _mm256_mul_ps(x, phi);
}

inline float hsum8(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

inline float hmax8(__m256 v) {
  __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_max_ps(a, _mm_movehl_ps(a, a));
  a = _mm_max_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

}  // namespace
#endif

void exp_inplace(float* x, size_t n) {
  size_t i = 0;
#ifdef CF_SHAPE_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, exp8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) x[i] = exp_approx(x[i]);
}

void gelu_inplace(float* x, size_t n) {
  size_t i = 0;
#ifdef CF_SHAPE_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) x[i] = gelu_approx(x[i]);
}

void silu_inplace(float* x, size_t n) {
  size_t i = 0;
#ifdef CF_SHAPE_AVX2
  const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(x + i, _mm256_div_ps(v, _mm256_add_ps(one, exp8(_mm256_xor_ps(v, neg)))));
  }
#endif
  for (; i < n; ++i) x[i] = x[i] / (1.0f + exp_approx(-x[i]));
}

namespace {

float row_sum(const float* x, int n) {
  int i = 0;
  float s = 0;
#ifdef CF_SHAPE_AVX2
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
  s = hsum8(_mm256_add_ps(a0, a1));
#endif
  for (; i < n; ++i) s += x[i];
  return s;
}

float row_sq_dev(const float* x, int n, float mean) {
  int i = 0;
  float s = 0;
#ifdef CF_SHAPE_AVX2
  const __m256 m = _mm256_set1_ps(mean);
  __m256 a0 = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
    a0 = _mm256_fmadd_ps(d, d, a0);
  }
  s = hsum8(a0);
#endif
  for (; i < n; ++i) s += (x[i] - mean) * (x[i] - mean);
  return s;
}

float row_max(const float* x, int n) {
  int i = 0;
  float m = -INFINITY;
#ifdef CF_SHAPE_AVX2
  __m256 a = _mm256_set1_ps(-INFINITY);
  for (; i + 8 <= n; i += 8) a = _mm256_max_ps(a, _mm256_loadu_ps(x + i));
  m = hmax8(a);
#endif
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// x ← exp(x − mx), returns the sum
float exp_shift_sum(float* x, int n, float mx) {
  int i = 0;
  float s = 0;
#ifdef CF_SHAPE_AVX2
  const __m256 m = _mm256_set1_ps(mx);
  __m256 a = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    a = _mm256_add_ps(a, e);
  }
  s = hsum8(a);
#endif
  for (; i < n; ++i) {
    x[i] = exp_approx(x[i] - mx);
    s += x[i];
  }
  return s;
}

}  // namespace

void layer_norm_rows(const float* x, size_t M, int D, float eps, const float* w, const float* b, float* y) {
  for (size_t i = 0; i < M; ++i) {
    const float* xi = x + i * D;
    float* yi = y + i * D;
    const float mean = row_sum(xi, D) / float(D);
    const float r = 1.0f / std::sqrt(row_sq_dev(xi, D, mean) / float(D) + eps);
    if (w && b) {
      for (int d = 0; d < D; ++d) yi[d] = (xi[d] - mean) * r * w[d] + b[d];
    } else if (w) {
      for (int d = 0; d < D; ++d) yi[d] = (xi[d] - mean) * r * w[d];
    } else {
      for (int d = 0; d < D; ++d) yi[d] = (xi[d] - mean) * r;
    }
  }
}

void gemm_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
             int ldc) {
  cpu::gemm(true, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_nn(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
             int ldc) {
  cpu::gemm(false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void linear(const float* x, size_t M, int K, const float* W, const float* b, int N, float* y, bool accumulate) {
  if (M > size_t(std::numeric_limits<int>::max())) throw std::length_error("shape::linear: too many rows");
  cpu::linear_one_gemm(x, int(M), K, W, b, N, y, accumulate);
}

void attention_gemm(const float* q, int q_stride, int Tq, const float* k, int k_stride, const float* v, int v_stride,
                    int Tk, int n_heads, int hd, float scale, float* out, int out_stride, float* scratch,
                    bool parallel_rows) {
  if (Tq <= 0) return;
  std::vector<float> inv(Tq);
  for (int h = 0; h < n_heads; ++h) {
    gemm_nt(Tq, Tk, hd, scale, q + h * hd, q_stride, k + h * hd, k_stride, 0.0f, scratch, Tk);
#pragma omp parallel for if (parallel_rows && size_t(Tq) * Tk > 32768) schedule(static)
    for (int i = 0; i < Tq; ++i) {
      float* s = scratch + size_t(i) * Tk;
      inv[i] = 1.0f / exp_shift_sum(s, Tk, row_max(s, Tk));
    }
    float* o = out + h * hd;
    gemm_nn(Tq, hd, Tk, 1.0f, scratch, Tk, v + h * hd, v_stride, 0.0f, o, out_stride);
    for (int i = 0; i < Tq; ++i) {
      float* oi = o + size_t(i) * out_stride;
      for (int d = 0; d < hd; ++d) oi[d] *= inv[i];
    }
  }
}

void fourier_embed(const float* xyz, size_t n, const float* w, const float* carrier, int nf, float* out,
                   size_t out_stride) {
  const float pi = static_cast<float>(M_PI);
  const int half = 3 * nf;
  for (size_t p = 0; p < n; ++p) {
    const float* x = xyz + 3 * p;
    float* o = out + p * out_stride;
    o[0] = x[0];
    o[1] = x[1];
    o[2] = x[2];
    float* oc = o + 3;
    float* os = o + 3 + half;
    for (int a = 0; a < 3; ++a) {
      const float xa = x[a];
      const float ph = (xa * 0.5f) * pi;
      for (int kk = 0; kk < nf; ++kk) {
        const float f = xa * w[a * nf + kk];
        const float pp = ph + carrier[kk];
        float sf, cf, sp, cp;
        sincosf(f, &sf, &cf);
        sincosf(pp, &sp, &cp);
        oc[a * nf + kk] = cf + cp;
        os[a * nf + kk] = sf + sp;
      }
    }
  }
}

std::vector<float> fourier_carrier(int nf) {
  // torch.linspace(start, end, steps) in fp32: step = (end − start)/(steps − 1); the first half counts up from
  // start, the second half down from end.
  auto linspace = [](float start, float end, int steps) {
    std::vector<float> r(steps);
    if (steps == 1) {
      r[0] = start;
      return r;
    }
    const float step = (end - start) / float(steps - 1);
    const int halfway = steps / 2;
    for (int i = 0; i < steps; ++i)
      r[i] = i < halfway ? start + step * float(i) : end - step * float(steps - i - 1);
    return r;
  };
  const std::vector<float> lam = linspace(1.0f, 0.0f, nf), mu = linspace(0.0f, 1.0f, nf);
  const float base = static_cast<float>(double(nf) / 8.0);
  const float pi = static_cast<float>(M_PI);
  std::vector<float> c(nf);
  for (int k = 0; k < nf; ++k) c[k] = ((std::pow(base, lam[k]) + mu[k]) * 2.0f) * pi;
  return c;
}

namespace {

void gelu_parallel(float* x, size_t n) {
  const size_t block = 16384;
  const long nb = long((n + block - 1) / block);
#pragma omp parallel for if (nb > 1) schedule(static)
  for (long b = 0; b < nb; ++b) gelu_inplace(x + size_t(b) * block, std::min(block, n - size_t(b) * block));
}

void layer_norm_parallel(const float* x, int M, int D, float eps, const float* w, const float* b, float* y) {
#pragma omp parallel for if (M > 64) schedule(static)
  for (int i = 0; i < M; ++i) layer_norm_rows(x + size_t(i) * D, 1, D, eps, w, b, y + size_t(i) * D);
}

void mlp_residual(float* h, int T, int W, float ln_eps, const float* up_w, const float* up_b, const float* down_w,
                  const float* down_b, bool parallel) {
  std::vector<float> t(size_t(T) * W), u(size_t(T) * 4 * W);
  if (parallel)
    layer_norm_parallel(h, T, W, ln_eps, nullptr, nullptr, t.data());
  else
    layer_norm_rows(h, T, W, ln_eps, nullptr, nullptr, t.data());
  linear(t.data(), T, W, up_w, up_b, 4 * W, u.data());
  if (parallel)
    gelu_parallel(u.data(), u.size());
  else
    gelu_inplace(u.data(), u.size());
  linear(u.data(), T, 4 * W, down_w, down_b, W, h, /*accumulate=*/true);
}

}  // namespace

void self_attn_layer(float* h, int T, int W, int n_heads, float ln_eps, const SelfAttnWeights& L, bool parallel) {
  const int hd = W / n_heads;
  std::vector<float> t(size_t(T) * W), qk(size_t(T) * 2 * W), v(size_t(T) * W), att(size_t(T) * W),
      s(size_t(T) * T);
  if (parallel)
    layer_norm_parallel(h, T, W, ln_eps, nullptr, nullptr, t.data());
  else
    layer_norm_rows(h, T, W, ln_eps, nullptr, nullptr, t.data());
  linear(t.data(), T, W, L.qk_w, L.qk_b, 2 * W, qk.data());
  linear(t.data(), T, W, L.v_w, L.v_b, W, v.data());
  cpu::rms_norm_heads(qk.data(), T, 2 * W, n_heads, hd, L.q_norm, 1e-5f);
  cpu::rms_norm_heads(qk.data() + W, T, 2 * W, n_heads, hd, L.k_norm, 1e-5f);
  attention_gemm(qk.data(), 2 * W, T, qk.data() + W, 2 * W, v.data(), W, T, n_heads, hd,
                 1.0f / std::sqrt(float(hd)), att.data(), W, s.data(), parallel);
  linear(att.data(), T, W, L.proj_w, L.proj_b, W, h, /*accumulate=*/true);
  mlp_residual(h, T, W, ln_eps, L.up_w, L.up_b, L.down_w, L.down_b, parallel);
}

std::vector<float> cross_attn_kv(const float* c, int Tc, int W, float ln_eps, const CrossAttnWeights& L) {
  std::vector<float> t(size_t(Tc) * W), kv(size_t(Tc) * 2 * W);
  layer_norm_parallel(c, Tc, W, ln_eps, nullptr, nullptr, t.data());
  // Two GEMMs writing the interleaved halves of kv rows (row stride 2W).
  for (int part = 0; part < 2; ++part) {
    const float* Wt = part == 0 ? L.k_w : L.v_w;
    const float* bt = part == 0 ? L.k_b : L.v_b;
    float* y = kv.data() + part * W;
    for (int i = 0; i < Tc; ++i) std::memcpy(y + size_t(i) * 2 * W, bt, sizeof(float) * W);
    gemm_nt(Tc, W, W, 1.0f, t.data(), W, Wt, W, 1.0f, y, 2 * W);
  }
  return kv;
}

void cross_attn_layer(float* h, int T, int W, int n_heads, float ln_eps, const CrossAttnWeights& L, const float* kv,
                      int Tc, bool parallel) {
  const int hd = W / n_heads;
  std::vector<float> t(size_t(T) * W), q(size_t(T) * W), att(size_t(T) * W), s(size_t(T) * Tc);
  if (parallel)
    layer_norm_parallel(h, T, W, ln_eps, nullptr, nullptr, t.data());
  else
    layer_norm_rows(h, T, W, ln_eps, nullptr, nullptr, t.data());
  linear(t.data(), T, W, L.q_w, L.q_b, W, q.data());
  attention_gemm(q.data(), W, T, kv, 2 * W, kv + W, 2 * W, Tc, n_heads, hd, 1.0f / std::sqrt(float(hd)), att.data(), W,
                 s.data(), parallel);
  linear(att.data(), T, W, L.proj_w, L.proj_b, W, h, /*accumulate=*/true);
  mlp_residual(h, T, W, ln_eps, L.up_w, L.up_b, L.down_w, L.down_b, parallel);
}

}  // namespace cubeforge::shape
