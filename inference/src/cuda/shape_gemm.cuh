// Gemm, the shape engine's GEMMs: cuBLASLt with bias / GELU+bias epilogues, cublasGemmEx plus bias_act where Lt
// finds no algorithm (shape_gemm.cu); bias_act is also the decoders' activation pass.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>

#include <map>
#include <tuple>

#include "cuda_common.cuh"
#include "shape_engine_common.cuh"

namespace cubeforge::cuda::shape_detail {

using detail::bf16;

// In place on rows x cols of y: act(bf16(y + bias)) (bias_act_kernel, shape_gemm.cu), on stream st.
void bias_act(cudaStream_t st, bf16* y, long rows, int cols, const bf16* bias, int act);

// Y[rows, N] = epilogue(X[rows, K] . W[N, K]^T + bias) (+ Y when accumulating), bf16 in/out, fp32 accumulation.
// cuBLASLt with bias / GELU+bias epilogues (plans cached per shape); where Lt finds no algorithm, cublasGemmEx plus
// the bias/activation kernel.
class Gemm {
 public:
  enum Epi { kBias = 0, kGeluBias = 1 };

  void init(size_t* total);
  ~Gemm();

  void run(cudaStream_t st, const bf16* X, long rows, int K, const bf16* W, int N, const bf16* bias, bf16* Y, Epi epi,
           bool accumulate);
  int fallbacks() const { return fallbacks_; }
  int plans_ok() const {
    int n = 0;
    for (auto& kv : plans_) n += kv.second.ok;
    return n;
  }
  int plans() const { return int(plans_.size()); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;
  };
  Plan& plan(long rows, int K, int N, Epi epi, bool acc, const bf16* bias);

  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DevBuf ws_;
  std::map<std::tuple<long, int, int, int, int>, Plan> plans_;
  int fallbacks_ = 0;
};

}  // namespace cubeforge::cuda::shape_detail
