// TEST REFERENCE ONLY: a plain fp32 GPU forward of the DualStreamRoformer over the whole teacher-forced sequence
// (no KV cache, explicit joint mask, cuBLAS SGEMM with TF32 off). Written independently of the engine's kernels
// (other weight layout, other attention algorithm) so that comparing the two checks the engine. Not tuned.
#include <cublas_v2.h>

#include <cmath>
#include <map>
#include <vector>

#include "cubeforge/cuda_gpt.h"
#include "cuda_common.cuh"

namespace cubeforge::cuda::testing {
using namespace cubeforge::cuda::detail;

namespace {
constexpr int RD = 1536, RH = 12, RHD = 128, RF = 6144;

__global__ void ref_ln(const float* X, float* Y, int rows, float eps) {
  const int r = blockIdx.x;
  if (r >= rows) return;
  __shared__ double sh[2][32];
  double s = 0, q = 0;
  for (int i = threadIdx.x; i < RD; i += blockDim.x) {
    const double v = X[(size_t)r * RD + i];
    s += v;
    q += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  if ((threadIdx.x & 31) == 0) {
    sh[0][threadIdx.x >> 5] = s;
    sh[1][threadIdx.x >> 5] = q;
  }
  __syncthreads();
  s = q = 0;
  for (int i = 0; i < (int)blockDim.x / 32; ++i) {
    s += sh[0][i];
    q += sh[1][i];
  }
  const double mean = s / RD, var = q / RD - mean * mean;
  const float rstd = (float)(1.0 / sqrt(var + eps));
  for (int i = threadIdx.x; i < RD; i += blockDim.x)
    Y[(size_t)r * RD + i] = (X[(size_t)r * RD + i] - (float)mean) * rstd;
}

__global__ void ref_add_bias(float* Y, int rows, int cols, int ld, const float* b) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)rows * cols; i += (long)gridDim.x * blockDim.x)
    Y[(i / cols) * ld + i % cols] += b[i % cols];
}
__global__ void ref_residual(float* X, const float* Y, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) X[i] += Y[i];
}
// gate/up [rows][2F] (gate first F columns) -> h [rows][F]
__global__ void ref_swiglu(const float* GU, float* Hh, long rows) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < rows * RF; i += (long)gridDim.x * blockDim.x) {
    const long r = i / RF, f = i % RF;
    const float g = GU[r * 2 * RF + f], u = GU[r * 2 * RF + RF + f];
    Hh[i] = g / (1.f + expf(-g)) * u;
  }
}
// RMSNorm + RoPE of one head vector in place: grid (rows), block (RH*64): thread = (head, pair)
__global__ void ref_norm_rope(float* QKV, int ld, int col0, const float* w, const int* posv, const float2* rope) {
  const int row = blockIdx.x, h = threadIdx.x / 64, j = threadIdx.x % 64;
  float* v = QKV + (size_t)row * ld + col0 + h * RHD;
  __shared__ float ss[RH];
  if (j == 0) {
    float s = 0;
    for (int d = 0; d < RHD; ++d) s += v[d] * v[d];
    ss[h] = s;
  }
  __syncthreads();
  const float r = 1.f / sqrtf(ss[h] / RHD + 1e-5f);
  const float a = v[2 * j] * r * w[2 * j], b = v[2 * j + 1] * r * w[2 * j + 1];
  const float2 cs = rope[posv[row] * 64 + j];
  const float c = cs.x, s = cs.y;
  __syncthreads();
  v[2 * j] = a * c - b * s;
  v[2 * j + 1] = a * s + b * c;
}
// Attention for query rows [q0, q0+nq) of each batch row over keys [0, J) of the same batch row with
// mask(qi, kj): kj <= limit(qi). mode 0: limit = qi (joint causal); mode 1: limit = 0 (slot 0 only).
// Q/K/V: [B][J][ld] at columns qc/kc/vc; out [B][J][RD]. grid (nq, RH, B), 128 threads.
__global__ void ref_attention(const float* QKV, int J, int ld, int qc, int kc, int vc, int q0, int key0, int mode,
                              float* out) {
  const int qi = q0 + blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  extern __shared__ float sc[];
  __shared__ float q[RHD], red[2];
  const float* base = QKV + (size_t)b * J * ld;
  q[threadIdx.x] = base[(size_t)qi * ld + qc + h * RHD + threadIdx.x];
  __syncthreads();
  const int limit = mode == 0 ? qi : key0;
  const int nk = limit - key0 + 1;
  for (int t = threadIdx.x; t < nk; t += blockDim.x) {
    const float* k = base + (size_t)(key0 + t) * ld + kc + h * RHD;
    float d = 0;
    for (int e = 0; e < RHD; ++e) d += q[e] * k[e];
    sc[t] = d / sqrtf((float)RHD);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = -INFINITY;
    for (int t = 0; t < nk; ++t) m = fmaxf(m, sc[t]);
    float l = 0;
    for (int t = 0; t < nk; ++t) l += expf(sc[t] - m);
    red[0] = m;
    red[1] = l;
  }
  __syncthreads();
  float o = 0;
  for (int t = 0; t < nk; ++t) o += expf(sc[t] - red[0]) * base[(size_t)(key0 + t) * ld + vc + h * RHD + threadIdx.x];
  out[((size_t)b * J + qi) * RD + h * RHD + threadIdx.x] = o / red[1];
}
__global__ void ref_round_bf16(float* p, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    p[i] = __bfloat162float(__float2bfloat16_rn(p[i]));
}
}  // namespace

struct Fp32Reference::Impl {
  GptConfig cfg;
  int N, s, L, Vs, V;
  cublasHandle_t blas = nullptr;
  std::map<std::string, std::pair<float*, size_t>> w;
  ~Impl() {
    for (auto& kv : w) cudaFree(kv.second.first);
    if (blas) cublasDestroy(blas);
  }
  const float* W(const std::string& n) const {
    auto it = w.find(n);
    if (it == w.end()) throw cubeforge::Error("Fp32Reference: missing " + n);
    return it->second.first;
  }
  void put(const GptWeightSource& src, const std::string& n, std::vector<int64_t> shape, bool is_bias = false) {
    size_t cnt = 1;
    for (auto d : shape) cnt *= (size_t)d;
    float* d = nullptr;
    CF_CUDA(cudaMalloc(&d, cnt * 4));
    if (is_bias && !cfg.bias) {
      CF_CUDA(cudaMemset(d, 0, cnt * 4));
    } else {
      std::vector<float> v = src.get(n, shape);
      if (v.size() != cnt) throw cubeforge::Error("Fp32Reference: bad size for " + n);
      CF_CUDA(cudaMemcpy(d, v.data(), cnt * 4, cudaMemcpyHostToDevice));
    }
    w[n] = {d, cnt};
  }
  // C[b][m][ldc] (+col offset already in C) = A[b][m][lda] * W[n][k]^T, batched over B with strides.
  void sgemm(const float* A, int lda, long sA, const float* Wt, int n, int k, float* C, int ldc, long sC, int m, int B) {
    const float one = 1.f, zero = 0.f;
    if (cublasSgemmStridedBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, Wt, k, 0, A, lda, sA, &zero, C, ldc,
                                  sC, B) != CUBLAS_STATUS_SUCCESS)
      throw cubeforge::Error("Fp32Reference: SGEMM failed");
  }
};

Fp32Reference::Fp32Reference(const GptConfig& cfg, int num_tokens, int cond_len, const GptWeightSource& src)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.cfg = cfg;
  m.N = num_tokens;
  m.s = cond_len;
  m.L = cfg.n_layer;
  m.Vs = cfg.shape_model_vocab_size;
  m.V = cfg.vocab();
  if (cublasCreate(&m.blas) != CUBLAS_STATUS_SUCCESS) throw cubeforge::Error("Fp32Reference: cublasCreate");
  cublasSetMathMode(m.blas, CUBLAS_PEDANTIC_MATH);
  auto pre = [&](const std::string& p) {
    m.put(src, p + "c_qk.weight", {2 * RD, RD});
    m.put(src, p + "c_v.weight", {RD, RD});
    m.put(src, p + "c_v.bias", {RD}, true);
    m.put(src, p + "q_norm.weight", {RHD});
    m.put(src, p + "k_norm.weight", {RHD});
  };
  auto post = [&](const std::string& p, const std::string& proj) {
    m.put(src, p + proj + ".weight", {RD, RD});
    m.put(src, p + proj + ".bias", {RD}, true);
    m.put(src, p + "mlp.gate_proj.weight", {RF, RD});
    m.put(src, p + "mlp.gate_proj.bias", {RF}, true);
    m.put(src, p + "mlp.up_proj.weight", {RF, RD});
    m.put(src, p + "mlp.up_proj.bias", {RF}, true);
    m.put(src, p + "mlp.down_proj.weight", {RD, RF});
    m.put(src, p + "mlp.down_proj.bias", {RD}, true);
  };
  for (int l = 0; l < m.L; ++l) {
    const std::string b = "transformer.dual_blocks." + std::to_string(l) + ".";
    pre(b + "attn.pre_x.");
    post(b + "post_1.", "c_proj");
    if (l < m.L - 1) {
      pre(b + "attn.pre_c.");
      post(b + "post_2.", "c_proj");
    } else {
      m.put(src, b + "attn.pre_c.c_k.weight", {RD, RD});
      m.put(src, b + "attn.pre_c.c_k.bias", {RD}, true);
      m.put(src, b + "attn.pre_c.k_norm.weight", {RHD});
      m.put(src, b + "attn.pre_c.c_v.weight", {RD, RD});
      m.put(src, b + "attn.pre_c.c_v.bias", {RD}, true);
    }
  }
  pre("transformer.single_blocks.0.attn.");
  post("transformer.single_blocks.0.", "attn.c_proj");
  m.put(src, "transformer.wte.weight", {m.V, RD});
  m.put(src, "lm_head.weight", {m.V, RD});
}
Fp32Reference::~Fp32Reference() = default;

void Fp32Reference::round_weights_to_bf16() {
  for (auto& kv : impl_->w) {
    if (kv.first == "transformer.wte.weight" || kv.first.find("norm.weight") != std::string::npos) continue;
    ref_round_bf16<<<1024, 256>>>(kv.second.first, (long)kv.second.second);
  }
  CF_CUDA(cudaDeviceSynchronize());
}

std::vector<float> Fp32Reference::forward(const float* cond, int rows, bool cfg, const std::vector<int32_t>& tokens,
                                          int T, SingleBlockAttention mode) {
  Impl& m = *impl_;
  const int R = rows, P = cfg ? rows / 2 : rows, s = m.s, J = s + T;
  if ((int)tokens.size() < P * T) throw cubeforge::Error("Fp32Reference: tokens must be [P][T]");
  const size_t RJ = (size_t)R * J;
  float *X, *A, *QKV, *ATT, *Y, *GU, *HH, *LOG;
  int* posv;
  CF_CUDA(cudaMalloc(&X, RJ * RD * 4));
  CF_CUDA(cudaMalloc(&A, RJ * RD * 4));
  CF_CUDA(cudaMalloc(&QKV, RJ * 3 * RD * 4));
  CF_CUDA(cudaMalloc(&ATT, RJ * RD * 4));
  CF_CUDA(cudaMalloc(&Y, RJ * RD * 4));
  CF_CUDA(cudaMalloc(&GU, RJ * 2 * RF * 4));
  CF_CUDA(cudaMalloc(&HH, RJ * RF * 4));
  CF_CUDA(cudaMalloc(&LOG, (size_t)R * T * m.Vs * 4));
  CF_CUDA(cudaMalloc(&posv, RJ * 4));
  // inputs: cond rows then BOS + embeddings of tokens[p][0..T-2]
  {
    std::vector<float> wte((size_t)m.V * RD);
    CF_CUDA(cudaMemcpy(wte.data(), m.W("transformer.wte.weight"), wte.size() * 4, cudaMemcpyDeviceToHost));
    std::vector<float> h(RJ * RD);
    std::vector<int> pv(RJ);
    for (int r = 0; r < R; ++r) {
      const int p = r % P;
      for (int j = 0; j < J; ++j) {
        float* dst = h.data() + ((size_t)r * J + j) * RD;
        if (j < s) {
          std::copy(cond + ((size_t)r * s + j) * RD, cond + ((size_t)r * s + j + 1) * RD, dst);
          pv[(size_t)r * J + j] = 0;
        } else {
          const int sj = j - s;
          const int tok = sj == 0 ? m.cfg.bos_id() : tokens[(size_t)p * T + sj - 1];
          std::copy(wte.data() + (size_t)tok * RD, wte.data() + (size_t)(tok + 1) * RD, dst);
          pv[(size_t)r * J + j] = sj;
        }
      }
    }
    CF_CUDA(cudaMemcpy(X, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    CF_CUDA(cudaMemcpy(posv, pv.data(), pv.size() * 4, cudaMemcpyHostToDevice));
  }
  const long sJ = (long)J * RD, sJ3 = (long)J * 3 * RD, sJF = (long)J * 2 * RF, sJH = (long)J * RF;
  float2* rope;
  CF_CUDA(cudaMalloc(&rope, (size_t)T * 64 * sizeof(float2)));
  {
    std::vector<float2> t((size_t)T * 64);
    for (int j = 0; j < 64; ++j) {
      const float inv = 1.0f / std::pow((float)m.cfg.rope_theta, (float)(2 * j) / 128.f);
      for (int p = 0; p < T; ++p) {
        const float a = (float)p * inv;
        t[(size_t)p * 64 + j] = make_float2((float)std::cos((double)a), (float)std::sin((double)a));
      }
    }
    CF_CUDA(cudaMemcpy(rope, t.data(), t.size() * sizeof(float2), cudaMemcpyHostToDevice));
  }
  const size_t attn_smem = (size_t)J * 4;
  auto stream_part = [&](int first, int count, const std::string& pre_pfx) {
    // q|k|v for rows [first, first+count) of each batch row (attention is done jointly afterwards).
    m.sgemm(A + (size_t)first * RD, RD, sJ, m.W(pre_pfx + "c_qk.weight"), 2 * RD, RD, QKV + (size_t)first * 3 * RD,
            3 * RD, sJ3, count, R);
    m.sgemm(A + (size_t)first * RD, RD, sJ, m.W(pre_pfx + "c_v.weight"), RD, RD, QKV + (size_t)first * 3 * RD + 2 * RD,
            3 * RD, sJ3, count, R);
  };
  auto add_bias_rows = [&](float* base, long stride, int first, int count, int cols, int ld, const float* b) {
    for (int r = 0; r < R; ++r) ref_add_bias<<<256, 256>>>(base + r * stride + (size_t)first * ld, count, cols, ld, b);
  };
  auto norm_rope_rows = [&](int first, int count, int col0, const float* w) {
    for (int r = 0; r < R; ++r)
      ref_norm_rope<<<count, RH * 64>>>(QKV + ((size_t)r * J + first) * 3 * RD, 3 * RD, col0, w,
                                        posv + (size_t)r * J + first, rope);
  };
  auto post = [&](int first, int count, const std::string& pfx, const std::string& proj) {
    // X[rows] += proj(ATT) ; X += MLP(LN(X))
    m.sgemm(ATT + (size_t)first * RD, RD, sJ, m.W(pfx + proj + ".weight"), RD, RD, Y + (size_t)first * RD, RD, sJ, count, R);
    add_bias_rows(Y, sJ, first, count, RD, RD, m.W(pfx + proj + ".bias"));
    for (int r = 0; r < R; ++r)
      ref_residual<<<256, 256>>>(X + ((size_t)r * J + first) * RD, Y + ((size_t)r * J + first) * RD, (long)count * RD);
    for (int r = 0; r < R; ++r)
      ref_ln<<<count, 256>>>(X + ((size_t)r * J + first) * RD, A + ((size_t)r * J + first) * RD, count, m.cfg.eps);
    m.sgemm(A + (size_t)first * RD, RD, sJ, m.W(pfx + "mlp.gate_proj.weight"), RF, RD, GU + (size_t)first * 2 * RF,
            2 * RF, sJF, count, R);
    m.sgemm(A + (size_t)first * RD, RD, sJ, m.W(pfx + "mlp.up_proj.weight"), RF, RD, GU + (size_t)first * 2 * RF + RF,
            2 * RF, sJF, count, R);
    add_bias_rows(GU, sJF, first, count, RF, 2 * RF, m.W(pfx + "mlp.gate_proj.bias"));
    add_bias_rows(GU + RF, sJF, first, count, RF, 2 * RF, m.W(pfx + "mlp.up_proj.bias"));
    for (int r = 0; r < R; ++r)
      ref_swiglu<<<256, 256>>>(GU + ((size_t)r * J + first) * 2 * RF, HH + ((size_t)r * J + first) * RF, count);
    m.sgemm(HH + (size_t)first * RF, RF, sJH, m.W(pfx + "mlp.down_proj.weight"), RD, RF, Y + (size_t)first * RD, RD, sJ,
            count, R);
    add_bias_rows(Y, sJ, first, count, RD, RD, m.W(pfx + "mlp.down_proj.bias"));
    for (int r = 0; r < R; ++r)
      ref_residual<<<256, 256>>>(X + ((size_t)r * J + first) * RD, Y + ((size_t)r * J + first) * RD, (long)count * RD);
  };
  for (int l = 0; l < m.L; ++l) {
    const std::string b = "transformer.dual_blocks." + std::to_string(l) + ".";
    const bool last = l == m.L - 1;
    ref_ln<<<(unsigned)RJ, 256>>>(X, A, (int)RJ, m.cfg.eps);
    stream_part(s, T, b + "attn.pre_x.");
    add_bias_rows(QKV + 2 * RD, sJ3, s, T, RD, 3 * RD, m.W(b + "attn.pre_x.c_v.bias"));
    norm_rope_rows(s, T, 0, m.W(b + "attn.pre_x.q_norm.weight"));
    norm_rope_rows(s, T, RD, m.W(b + "attn.pre_x.k_norm.weight"));
    if (!last) {
      stream_part(0, s, b + "attn.pre_c.");
      add_bias_rows(QKV + 2 * RD, sJ3, 0, s, RD, 3 * RD, m.W(b + "attn.pre_c.c_v.bias"));
      norm_rope_rows(0, s, 0, m.W(b + "attn.pre_c.q_norm.weight"));
      norm_rope_rows(0, s, RD, m.W(b + "attn.pre_c.k_norm.weight"));
      ref_attention<<<dim3(J, RH, R), 128, attn_smem>>>(QKV, J, 3 * RD, 0, RD, 2 * RD, 0, 0, 0, ATT);
    } else {
      m.sgemm(A, RD, sJ, m.W(b + "attn.pre_c.c_k.weight"), RD, RD, QKV + RD, 3 * RD, sJ3, s, R);
      m.sgemm(A, RD, sJ, m.W(b + "attn.pre_c.c_v.weight"), RD, RD, QKV + 2 * RD, 3 * RD, sJ3, s, R);
      add_bias_rows(QKV + RD, sJ3, 0, s, RD, 3 * RD, m.W(b + "attn.pre_c.c_k.bias"));
      add_bias_rows(QKV + 2 * RD, sJ3, 0, s, RD, 3 * RD, m.W(b + "attn.pre_c.c_v.bias"));
      norm_rope_rows(0, s, RD, m.W(b + "attn.pre_c.k_norm.weight"));
      ref_attention<<<dim3(T, RH, R), 128, attn_smem>>>(QKV, J, 3 * RD, 0, RD, 2 * RD, s, 0, 0, ATT);
    }
    CF_CUDA(cudaGetLastError());
    post(s, T, b + "post_1.", "c_proj");
    if (!last) post(0, s, b + "post_2.", "c_proj");
  }
  // single block over the shape rows only: its own sequence positions 0..T-1 (rows s.. of the joint buffer)
  {
    const std::string b = "transformer.single_blocks.0.";
    ref_ln<<<(unsigned)RJ, 256>>>(X, A, (int)RJ, m.cfg.eps);
    stream_part(s, T, b + "attn.");
    add_bias_rows(QKV + 2 * RD, sJ3, s, T, RD, 3 * RD, m.W(b + "attn.c_v.bias"));
    norm_rope_rows(s, T, 0, m.W(b + "attn.q_norm.weight"));
    norm_rope_rows(s, T, RD, m.W(b + "attn.k_norm.weight"));
    // keys start at joint row s (shape position 0)
    ref_attention<<<dim3(T, RH, R), 128, attn_smem>>>(QKV, J, 3 * RD, 0, RD, 2 * RD, s, s,
                                                     mode == SingleBlockAttention::Causal ? 0 : 1, ATT);
    CF_CUDA(cudaGetLastError());
    post(s, T, b, "attn.c_proj");
  }
  ref_ln<<<(unsigned)RJ, 256>>>(X, A, (int)RJ, m.cfg.eps);
  // logits of shape rows: [R][T][Vs]
  m.sgemm(A + (size_t)s * RD, RD, sJ, m.W("lm_head.weight"), m.Vs, RD, LOG, m.Vs, (long)T * m.Vs, T, R);
  CF_CUDA(cudaDeviceSynchronize());
  std::vector<float> out((size_t)R * T * m.Vs);
  CF_CUDA(cudaMemcpy(out.data(), LOG, out.size() * 4, cudaMemcpyDeviceToHost));
  for (void* p : {(void*)X, (void*)A, (void*)QKV, (void*)ATT, (void*)Y, (void*)GU, (void*)HH, (void*)LOG, (void*)posv, (void*)rope})
    cudaFree(p);
  return out;
}

}  // namespace cubeforge::cuda::testing
