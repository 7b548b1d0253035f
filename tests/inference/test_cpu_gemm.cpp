// The CPU path's GEMM and Linear (core/cpu_ops.h): they match a double-precision product whether split over the
// OpenMP threads or not, and a row of Linear does not depend on how many rows come with
// it (what lets the GPT decode batch rows without changing any row's logits).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_ops.h"

using namespace cubeforge;

namespace {

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// C = A·Bᵀ (B [N,K]) or A·B (B [K,N]) in double.
std::vector<double> reference(bool b_rows_are_n, int M, int N, int K, const std::vector<float>& A,
                              const std::vector<float>& B) {
  std::vector<double> C(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += double(A[size_t(i) * K + k]) * (b_rows_are_n ? B[size_t(j) * K + k] : B[size_t(k) * N + j]);
      C[size_t(i) * N + j] = s;
    }
  return C;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

}  // namespace

// Shapes on both sides of the split rule (rows when M >= N, else columns), with ragged slices, both layouts of B.
TEST(CpuGemm, SplitAndSingleThreadProductsMatchTheReference) {
  struct Shape {
    int M, N, K;
  };
  for (const Shape s : {Shape{77, 1000, 256}, Shape{513, 192, 192}, Shape{9, 3001, 130}}) {
    for (const bool nt : {true, false}) {
      const auto A = random_vector(size_t(s.M) * s.K, 1);
      const auto B = random_vector(size_t(s.N) * s.K, 2);
      std::vector<float> split(size_t(s.M) * s.N, 0.5f), serial = split;
      const int ldb = nt ? s.K : s.N;
      cpu::gemm(nt, s.M, s.N, s.K, 1.0f, A.data(), s.K, B.data(), ldb, 0.0f, split.data(), s.N);
      {
        cpu::SerialGemmScope one_thread(true);
        cpu::gemm(nt, s.M, s.N, s.K, 1.0f, A.data(), s.K, B.data(), ldb, 0.0f, serial.data(), s.N);
      }
      // fp32 sums of K products of values in [-1, 1] (OpenBLAS blocks a slice's product differently from the whole
      // one, so the two differ in the last bits): both within 1e-6 · K of the double product.
      const auto ref = reference(nt, s.M, s.N, s.K, A, B);
      EXPECT_LT(max_abs_diff(split, ref), 1e-6 * s.K) << s.M << "x" << s.N << "x" << s.K << (nt ? " NT" : " NN");
      EXPECT_LT(max_abs_diff(serial, ref), 1e-6 * s.K) << s.M << "x" << s.N << "x" << s.K << (nt ? " NT" : " NN");
    }
  }
}

TEST(CpuGemm, BetaAccumulatesIntoC) {
  const int M = 40, N = 300, K = 100;
  const auto A = random_vector(size_t(M) * K, 3), B = random_vector(size_t(N) * K, 4);
  std::vector<float> C(size_t(M) * N, 2.0f);
  cpu::gemm(true, M, N, K, 0.5f, A.data(), K, B.data(), K, 1.0f, C.data(), N);
  const auto ref = reference(true, M, N, K, A, B);
  double m = 0;
  for (size_t i = 0; i < C.size(); ++i) m = std::max(m, std::abs(double(C[i]) - (2.0 + 0.5 * ref[i])));
  EXPECT_LT(m, 1e-3);
}

// Linear's rows: the same bits whether a row comes alone or with up to three others, at the default model's widths
// (one thread per GEMV) and at widths whose GEMVs are split over the threads; bias and accumulate honoured.
TEST(CpuGemm, LinearRowDoesNotDependOnTheOtherRows) {
  for (const auto [K, N] : {std::pair{256, 1024}, std::pair{1536, 4608}, std::pair{130, 70}}) {
    const auto W = random_vector(size_t(N) * K, 5), b = random_vector(N, 6), x = random_vector(size_t(4) * K, 7);
    for (const bool acc : {false, true}) {
      std::vector<std::vector<float>> alone(4, std::vector<float>(N, 1.0f));
      for (int i = 0; i < 4; ++i) cpu::linear(x.data() + size_t(i) * K, 1, K, W.data(), b.data(), N, alone[i].data(), acc);
      for (int M = 2; M <= 4; ++M) {
        std::vector<float> y(size_t(M) * N, 1.0f);
        cpu::linear(x.data(), M, K, W.data(), b.data(), N, y.data(), acc);
        for (int i = 0; i < M; ++i)
          EXPECT_TRUE(std::equal(alone[i].begin(), alone[i].end(), y.begin() + size_t(i) * N))
              << "K " << K << " N " << N << " M " << M << " row " << i << (acc ? " accumulate" : "");
      }
      // Against the double product: y = (acc ? 1 : 0) + b + x·Wᵀ.
      const std::vector<float> x0(x.begin(), x.begin() + K);
      const auto ref = reference(true, 1, N, K, x0, W);
      double m = 0;
      for (int j = 0; j < N; ++j) m = std::max(m, std::abs(double(alone[0][j]) - ((acc ? 1.0 : 0.0) + b[j] + ref[j])));
      EXPECT_LT(m, 1e-6 * K) << "K " << K << " N " << N;
    }
  }
}
