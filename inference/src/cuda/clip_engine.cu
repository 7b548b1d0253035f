// CudaClipEngine (cuda_text.h): the CLIP text tower in fp32 on the GPU. Weights are uploaded once (q/k/v
// concatenated into one [3H][H] matrix per layer); a forward pass is cuBLAS SGEMMs (default math: no TF32) over all
// B×T rows plus small kernels: embeddings, LayerNorm (fp64 statistics, like the CPU path), bias + activation, and
// attention with one block per (head, query, row) over the visible keys only (causal ∩ key padding).
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cubeforge/cuda_gpt.h"
#include "cubeforge/cuda_text.h"
#include "cubeforge/error.h"
#include "cublas_check.h"
#include "cuda_common.cuh"

namespace cubeforge::cuda {
using detail::warp_max;
using detail::warp_sum;
using detail::warp_sum_d;

namespace {

constexpr int kThreads = 256;

// x[r][t][:] = tok[ids[r][t]] + pos[t]; grid (T, B).
__global__ void clip_embed_kernel(const int* __restrict__ ids, int T, int H, const float* __restrict__ tok,
                                  const float* __restrict__ pos, float* __restrict__ x) {
  const int t = blockIdx.x, r = blockIdx.y;
  const size_t row = size_t(r) * T + t;
  const float* e = tok + size_t(ids[row]) * H;
  for (int d = threadIdx.x; d < H; d += blockDim.x) x[row * H + d] = e[d] + pos[size_t(t) * H + d];
}

// Block-wide sum of a double (kThreads threads).
__device__ double block_sum_d(double v, double* red) {
  v = warp_sum_d(v);
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  __syncthreads();  // red may still be read by a previous call
  if (l == 0) red[w] = v;
  __syncthreads();
  double s = 0;
  for (int i = 0; i < kThreads / 32; ++i) s += red[i];
  return s;
}

// y = (x - mean) / sqrt(var + eps) * w + b per row, mean and variance accumulated in fp64 (as cpu::layer_norm).
__global__ void __launch_bounds__(kThreads) clip_layernorm_kernel(const float* __restrict__ x, int H, float eps,
                                                                  const float* __restrict__ w,
                                                                  const float* __restrict__ b, float* __restrict__ y) {
  __shared__ double red[kThreads / 32];
  const float* xr = x + size_t(blockIdx.x) * H;
  float* yr = y + size_t(blockIdx.x) * H;
  double s = 0;
  for (int d = threadIdx.x; d < H; d += kThreads) s += xr[d];
  const double mean = block_sum_d(s, red) / H;
  double v = 0;
  for (int d = threadIdx.x; d < H; d += kThreads) {
    const double t = xr[d] - mean;
    v += t * t;
  }
  const double var = block_sum_d(v, red) / H;
  const float m = float(mean), rs = 1.0f / sqrtf(float(var) + eps);
  for (int d = threadIdx.x; d < H; d += kThreads) yr[d] = (xr[d] - m) * rs * w[d] + b[d];
}

// y[r][c] = act(y[r][c] + bias[c]); act 0: none, 1: quick_gelu, 2: erf GELU. (The library compiles with
// --use_fast_math: expf is the fast intrinsic, a few ulp from the CPU's std::exp; the measured effect is reported by
// `cubeforge-gen bench-text-gpu`.)
__global__ void clip_bias_act_kernel(float* __restrict__ y, size_t n, int cols, const float* __restrict__ bias, int act) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float v = y[i] + bias[i % cols];
    if (act == 1) {
      v = v / (1.0f + ::expf(-1.702f * v));
    } else if (act == 2) {
      v = 0.5f * v * (1.0f + ::erff(v * 0.70710678118654752f));
    }
    y[i] = v;
  }
}

// One block per (head h, query t, row r): scores over the visible keys j < vis (vis = max(1, min(t + 1, valid[r]))),
// softmax, weighted sum of the values. qkv rows: [q | k | v], each H wide (q not yet scaled; HF scales q by
// hd^-0.5 after the projection, as here). Dynamic shared memory: hd (q) + T (scores) floats.
__global__ void __launch_bounds__(128) clip_attention_kernel(const float* __restrict__ qkv, int T, int H, int hd,
                                                            const int* __restrict__ valid, float scale,
                                                            float* __restrict__ out) {
  extern __shared__ float sm[];
  float* q = sm;
  float* p = sm + hd;
  __shared__ float red[4];
  const int h = blockIdx.x, t = blockIdx.y, r = blockIdx.z;
  const int vis = max(1, min(t + 1, valid[r]));
  const size_t ld = size_t(3) * H;
  const float* base = qkv + size_t(r) * T * ld;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) q[d] = base[size_t(t) * ld + h * hd + d] * scale;
  __syncthreads();
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < vis; j += blockDim.x) {
    const float* k = base + size_t(j) * ld + H + h * hd;
    float s = 0;
    for (int d = 0; d < hd; ++d) s += q[d] * k[d];
    p[j] = s;
    mx = fmaxf(mx, s);
  }
  mx = warp_max(mx);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
  __syncthreads();
  mx = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
  __syncthreads();
  float sum = 0;
  for (int j = threadIdx.x; j < vis; j += blockDim.x) {
    const float e = ::expf(p[j] - mx);
    p[j] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = sum;
  __syncthreads();
  const float inv = 1.0f / (red[0] + red[1] + red[2] + red[3]);
  float* o = out + (size_t(r) * T + t) * H + h * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    const float* v = base + 2 * size_t(H) + h * hd + d;
    float acc = 0;
    for (int j = 0; j < vis; ++j) acc += p[j] * v[size_t(j) * ld];
    o[d] = acc * inv;
  }
}

struct Layer {
  float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
  float *qkv_w, *qkv_b, *out_w, *out_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
};

class ClipEngineImpl final : public CudaClipEngine {
 public:
  ClipEngineImpl(const TextConfig& cfg, int max_rows) : cfg_(cfg), max_rows_(max_rows), mem_("CUDA text encoder") {}
  ~ClipEngineImpl() override {
    if (blas_) cublasDestroy(blas_);
    if (ev0_) cudaEventDestroy(ev0_);
    if (ev1_) cudaEventDestroy(ev1_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void init(const ClipWeightSource& src) {
    const int H = cfg_.hidden_size, F = cfg_.intermediate_size, P = cfg_.max_position_embeddings;
    if (H <= 0 || F <= 0 || cfg_.num_attention_heads <= 0 || H % cfg_.num_attention_heads != 0)
      throw Error("CUDA text encoder: hidden_size must be a positive multiple of num_attention_heads");
    if (cfg_.hidden_act != "quick_gelu" && cfg_.hidden_act != "gelu")
      throw Error("CUDA text encoder: hidden_act '" + cfg_.hidden_act + "' is not supported (quick_gelu, gelu)");
    int dev = 0;
    CF_CUDA(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    CF_CUDA(cudaGetDeviceProperties(&prop, dev));
    dev_name_ = prop.name;
    CF_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CF_CUDA(cudaEventCreate(&ev0_));
    CF_CUDA(cudaEventCreate(&ev1_));
    CF_CUBLAS(cublasCreate(&blas_));
    CF_CUBLAS(cublasSetStream(blas_, stream_));
    CF_CUBLAS(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH));  // fp32 FMA GEMMs, never TF32
    const std::string pre = "text_model.";
    tok_ = upload(src.get(pre + "embeddings.token_embedding.weight", {cfg_.vocab_size, H}));
    pos_ = upload(src.get(pre + "embeddings.position_embedding.weight", {P, H}));
    lnf_w_ = upload(src.get(pre + "final_layer_norm.weight", {H}));
    lnf_b_ = upload(src.get(pre + "final_layer_norm.bias", {H}));
    for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
      const std::string p = pre + "encoder.layers." + std::to_string(l) + ".";
      Layer L{};
      L.ln1_w = upload(src.get(p + "layer_norm1.weight", {H}));
      L.ln1_b = upload(src.get(p + "layer_norm1.bias", {H}));
      L.ln2_w = upload(src.get(p + "layer_norm2.weight", {H}));
      L.ln2_b = upload(src.get(p + "layer_norm2.bias", {H}));
      std::vector<float> w, b;
      for (const char* n : {"q_proj", "k_proj", "v_proj"}) {
        const auto wi = src.get(p + "self_attn." + n + ".weight", {H, H});
        const auto bi = src.get(p + "self_attn." + n + ".bias", {H});
        w.insert(w.end(), wi.begin(), wi.end());
        b.insert(b.end(), bi.begin(), bi.end());
      }
      L.qkv_w = upload(w);
      L.qkv_b = upload(b);
      L.out_w = upload(src.get(p + "self_attn.out_proj.weight", {H, H}));
      L.out_b = upload(src.get(p + "self_attn.out_proj.bias", {H}));
      L.fc1_w = upload(src.get(p + "mlp.fc1.weight", {F, H}));
      L.fc1_b = upload(src.get(p + "mlp.fc1.bias", {F}));
      L.fc2_w = upload(src.get(p + "mlp.fc2.weight", {H, F}));
      L.fc2_b = upload(src.get(p + "mlp.fc2.bias", {H}));
      layers_.push_back(L);
    }
    const size_t rows = size_t(max_rows_) * P;
    ids_d_ = mem_.alloc<int>(rows);
    valid_d_ = mem_.alloc<int>(max_rows_);
    x_ = mem_.alloc<float>(rows * H);
    h_ = mem_.alloc<float>(rows * H);
    a_ = mem_.alloc<float>(rows * H);
    qkv_ = mem_.alloc<float>(rows * 3 * H);
    f_ = mem_.alloc<float>(rows * F);
    CF_CUDA(cudaStreamSynchronize(stream_));
  }

  void encode(const int64_t* ids, const int64_t* mask, int B, int T, float* last_hidden, double* device_ms) override {
    const int H = cfg_.hidden_size, F = cfg_.intermediate_size, nh = cfg_.num_attention_heads, hd = H / nh;
    if (B < 1 || B > max_rows_)
      throw Error("CUDA text encoder: " + std::to_string(B) + " rows, built for 1.." + std::to_string(max_rows_));
    if (T < 1 || T > cfg_.max_position_embeddings)
      throw Error("CLIP input of " + std::to_string(T) + " tokens exceeds max_position_embeddings");
    std::vector<int> hid(size_t(B) * T), valid(B);
    for (int r = 0; r < B; ++r) {
      const int64_t* id = ids + size_t(r) * T;
      const int64_t* mk = mask + size_t(r) * T;
      for (int t = 0; t < T; ++t) {
        if (id[t] < 0 || id[t] >= cfg_.vocab_size)
          throw Error("CLIP token id " + std::to_string(id[t]) + " outside the vocabulary of " +
                      std::to_string(cfg_.vocab_size));
        hid[size_t(r) * T + t] = int(id[t]);
      }
      int v = 0;
      while (v < T && mk[v]) ++v;
      for (int t = v; t < T; ++t)
        if (mk[t]) throw Error("CLIP attention mask must be ones followed by zeros");
      valid[r] = v;
    }
    const int M = B * T;
    CF_CUDA(cudaMemcpyAsync(ids_d_, hid.data(), hid.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
    CF_CUDA(cudaMemcpyAsync(valid_d_, valid.data(), valid.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
    CF_CUDA(cudaEventRecord(ev0_, stream_));
    clip_embed_kernel<<<dim3(T, B), kThreads, 0, stream_>>>(ids_d_, T, H, tok_, pos_, x_);
    CF_CUDA(cudaGetLastError());
    const float scale = 1.0f / std::sqrt(float(hd));
    const int act = cfg_.hidden_act == "quick_gelu" ? 1 : 2;
    for (const Layer& L : layers_) {
      layer_norm(x_, M, L.ln1_w, L.ln1_b, h_);
      linear(h_, M, H, L.qkv_w, 3 * H, qkv_, 0.0f);
      bias_act(qkv_, M, 3 * H, L.qkv_b, 0);
      clip_attention_kernel<<<dim3(nh, T, B), 128, size_t(hd + T) * sizeof(float), stream_>>>(qkv_, T, H, hd, valid_d_,
                                                                                           scale, a_);
      CF_CUDA(cudaGetLastError());
      linear(a_, M, H, L.out_w, H, x_, 1.0f);  // x += a W^T, then + bias
      bias_act(x_, M, H, L.out_b, 0);
      layer_norm(x_, M, L.ln2_w, L.ln2_b, h_);
      linear(h_, M, H, L.fc1_w, F, f_, 0.0f);
      bias_act(f_, M, F, L.fc1_b, act);
      linear(f_, M, F, L.fc2_w, H, x_, 1.0f);
      bias_act(x_, M, H, L.fc2_b, 0);
    }
    layer_norm(x_, M, lnf_w_, lnf_b_, h_);
    CF_CUDA(cudaEventRecord(ev1_, stream_));
    CF_CUDA(cudaMemcpyAsync(last_hidden, h_, size_t(M) * H * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CF_CUDA(cudaStreamSynchronize(stream_));
    if (device_ms) {
      float ms = 0;
      CF_CUDA(cudaEventElapsedTime(&ms, ev0_, ev1_));
      *device_ms = ms;
    }
  }

  size_t vram_bytes() const override { return mem_.bytes(); }
  std::string device_name() const override { return dev_name_; }

 private:
  float* upload(const std::vector<float>& v) {
    float* d = mem_.alloc<float>(v.size());
    CF_CUDA(cudaMemcpyAsync(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    CF_CUDA(cudaStreamSynchronize(stream_));  // v is a temporary of the caller
    return d;
  }
  void layer_norm(const float* x, int M, const float* w, const float* b, float* y) {
    clip_layernorm_kernel<<<M, kThreads, 0, stream_>>>(x, cfg_.hidden_size, cfg_.layer_norm_eps, w, b, y);
    CF_CUDA(cudaGetLastError());
  }
  // Y[M][N] = X[M][K] W[N][K]^T + beta Y (row-major; column-major cuBLAS sees Y^T = W X^T).
  void linear(const float* X, int M, int K, const float* W, int N, float* Y, float beta) {
    const float alpha = 1.0f;
    CF_CUBLAS(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W, K, X, K, &beta, Y, N));
  }
  void bias_act(float* y, int M, int N, const float* bias, int act) {
    const size_t n = size_t(M) * N;
    const unsigned blocks = unsigned(std::min<size_t>((n + kThreads - 1) / kThreads, 4096));
    clip_bias_act_kernel<<<blocks, kThreads, 0, stream_>>>(y, n, N, bias, act);
    CF_CUDA(cudaGetLastError());
  }

  TextConfig cfg_;
  int max_rows_;
  detail::DeviceAllocations mem_;
  std::string dev_name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ev0_ = nullptr, ev1_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  float *tok_ = nullptr, *pos_ = nullptr, *lnf_w_ = nullptr, *lnf_b_ = nullptr;
  std::vector<Layer> layers_;
  int *ids_d_ = nullptr, *valid_d_ = nullptr;
  float *x_ = nullptr, *h_ = nullptr, *a_ = nullptr, *qkv_ = nullptr, *f_ = nullptr;
};

}  // namespace

std::unique_ptr<CudaClipEngine> CudaClipEngine::create(const TextConfig& cfg, const ClipWeightSource& weights,
                                                       int max_rows) {
  std::string why;
  if (!cuda_available(&why)) throw Error("CUDA text encoder unavailable: " + why);
  if (max_rows < 1) throw Error("CUDA text encoder: max_rows must be at least 1");
  auto e = std::make_unique<ClipEngineImpl>(cfg, max_rows);
  e->init(weights);
  return e;
}

}  // namespace cubeforge::cuda
