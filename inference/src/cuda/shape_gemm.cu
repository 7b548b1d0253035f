// The shape engine's GEMM wrapper (Gemm, shape_gemm.cuh): cuBLASLt plans per shape with bias / GELU+bias epilogues,
// the cublasGemmEx fall-back, and bias_act_kernel (the bias/activation kernel behind the fall-back and bias_act).
#include "shape_gemm.cuh"

#include "cublas_check.h"
#include "shape_gpu_kernels.cuh"

namespace cubeforge::cuda::shape_detail {

// In-place y = act(bf16(y + bias)) on rows x cols (ld = cols), bias bf16 or null; results rounded to bf16.
__global__ void bias_act_kernel(bf16* __restrict__ y, long rows, int cols, const bf16* __restrict__ bias, int act) {
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int per = cols / 8;
  if (t >= size_t(rows) * per) return;
  const int c = int(t % per) * 8;
  uint4* p = reinterpret_cast<uint4*>(y + t * 8);
  float v[8];
  unpack8(*p, v);
  if (bias) {
    float b[8];
    unpack8(*reinterpret_cast<const uint4*>(bias + c), b);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = round_bf(v[e] + b[e]);
  }
  if (act == kActGelu) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = gelu_erf(v[e]);
  } else if (act == kActSilu) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = silu_f(v[e]);
  }
  *p = pack8(v);
}

// The one launch site of bias_act_kernel: a kernel that is not a template is defined in one .cu file (without
// separate compilation), so the latent decoder and the occupancy network launch it through here.
void bias_act(cudaStream_t st, bf16* y, long rows, int cols, const bf16* bias, int act) {
  bias_act_kernel<<<blocks_for(size_t(rows) * (cols / 8), 256), 256, 0, st>>>(y, rows, cols, bias, act);
  CF_CHECK_LAUNCH();
}

void Gemm::init(size_t* total) {
  CF_CUBLAS(cublasLtCreate(&lt_));
  CF_CUBLAS(cublasCreate(&blas_));
  ws_.total = total;
  ws_.ensure(size_t(32) << 20);
}

Gemm::~Gemm() {
  for (auto& kv : plans_) {
    cublasLtMatrixLayoutDestroy(kv.second.a);
    cublasLtMatrixLayoutDestroy(kv.second.b);
    cublasLtMatrixLayoutDestroy(kv.second.c);
    cublasLtMatmulDescDestroy(kv.second.desc);
  }
  ws_.release();
  if (blas_) cublasDestroy(blas_);
  if (lt_) cublasLtDestroy(lt_);
}

void Gemm::run(cudaStream_t st, const bf16* X, long rows, int K, const bf16* W, int N, const bf16* bias, bf16* Y,
               Epi epi, bool accumulate) {
  if (rows <= 0) return;
  Plan& p = plan(rows, K, N, epi, accumulate, bias);
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  if (p.ok) {
    CF_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    const cublasStatus_t s = cublasLtMatmul(lt_, p.desc, &alpha, W, p.a, X, p.b, &beta, Y, p.c, Y, p.c, &p.algo,
                                            ws_.p, ws_.bytes, st);
    if (s == CUBLAS_STATUS_SUCCESS) return;
    p.ok = false;  // this shape falls back from now on
    fallbacks_++;
  }
  CF_CUBLAS(cublasSetStream(blas_, st));
  CF_CUBLAS(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, N, int(rows), K, &alpha, W, CUDA_R_16BF, K, X, CUDA_R_16BF, K,
                     &beta, Y, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  bias_act(st, Y, rows, N, bias, epi == kGeluBias ? kActGelu : kActNone);
}

Gemm::Plan& Gemm::plan(long rows, int K, int N, Epi epi, bool acc, const bf16* bias) {
  const auto key = std::make_tuple(rows, K, N, int(epi), int(acc));
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan& p = plans_[key];
  CF_CUBLAS(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CF_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CF_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  const cublasLtEpilogue_t e = epi == kGeluBias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  CF_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
  CF_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  CF_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, K, N, K));
  CF_CUBLAS(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, K, uint64_t(rows), K));
  CF_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, N, uint64_t(rows), N));
  cublasLtMatmulPreference_t pref = nullptr;
  CF_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = ws_.bytes;
  CF_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t res{};
  int n = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &res, &n);
  cublasLtMatmulPreferenceDestroy(pref);
  p.ok = s == CUBLAS_STATUS_SUCCESS && n > 0;
  if (p.ok) p.algo = res.algo;
  else fallbacks_++;
  return p;
}

}  // namespace cubeforge::cuda::shape_detail
