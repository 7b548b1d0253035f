// CudaShapeEngine (cuda_shape.h, issue 8): bf16 weight arena of the shape decoder, latent decoder (24 self-attention
// layers: cuBLASLt GEMMs with bias epilogues + flash attention + fused residual/LayerNorm kernels), occupancy decoder
// over point chunks (per-axis first-layer tables for grid points, the Fourier path for arbitrary points), dense and
// coarse-to-fine grids built on the device (stream compaction with CUB, grid.h's rules), marching cubes on the device
// (marching_cubes.h conventions), and the host fall-backs (grid too large for the device: chunked host grid).
#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <map>
#include <thrust/iterator/counting_iterator.h>
#include <tuple>
#include <type_traits>

#include "cubeforge/cuda_gpt.h"
#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "cublas_check.h"
#include "mesh/mc_tables.h"
#include "shape/shape_kernels.h"
#include "shape_grid_kernels.cuh"

namespace cubeforge::cuda {
using namespace shape_detail;
using detail::bf16;

namespace {

#define CF_CHECK_LAUNCH() CF_CUDA(cudaGetLastError())

// Allocation failure on the device (the callers fall back to smaller chunks or a host grid).
class DeviceOom : public Error {
 public:
  using Error::Error;
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline unsigned blocks_for(size_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }
inline size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

uint16_t to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float bf16_round_host(float f) {
  const uint32_t u = uint32_t(to_bf16_bits(f)) << 16;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// Grow-only device buffer.
struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  size_t* total = nullptr;
  void ensure(size_t b) {
    if (b <= bytes) return;
    release();
    void* q = nullptr;
    const size_t want = std::max<size_t>(round_up(b, 256), 256);
    const cudaError_t e = cudaMalloc(&q, want);
    if (e != cudaSuccess) {
      cudaGetLastError();
      size_t fr = 0, tot = 0;
      cudaMemGetInfo(&fr, &tot);
      throw DeviceOom("CUDA shape: cannot allocate " + std::to_string(want >> 20) + " MiB on the device (" +
                      std::to_string(fr >> 20) + " MiB free of " + std::to_string(tot >> 20) + ")");
    }
    p = q;
    bytes = want;
    if (total) *total += bytes;
  }
  void release() {
    if (p) {
      cudaFree(p);
      if (total) *total -= bytes;
    }
    p = nullptr;
    bytes = 0;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// Y[rows, N] = epilogue(X[rows, K] . W[N, K]^T + bias) (+ Y when accumulating), bf16 in/out, fp32 accumulation.
// cuBLASLt with bias / GELU+bias epilogues (plans cached per shape); where Lt finds no algorithm, cublasGemmEx plus
// the bias/activation kernel.
class Gemm {
 public:
  enum Epi { kBias = 0, kGeluBias = 1 };

  void init(size_t* total) {
    CF_CUBLAS(cublasLtCreate(&lt_));
    CF_CUBLAS(cublasCreate(&blas_));
    ws_.total = total;
    ws_.ensure(size_t(32) << 20);
  }
  ~Gemm() {
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

  void run(cudaStream_t st, const bf16* X, long rows, int K, const bf16* W, int N, const bf16* bias, bf16* Y, Epi epi,
           bool accumulate) {
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
    const size_t work = size_t(rows) * (N / 8);
    bias_act_kernel<<<blocks_for(work, 256), 256, 0, st>>>(Y, rows, N, bias, epi == kGeluBias ? kActGelu : kActNone);
    CF_CHECK_LAUNCH();
  }
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
  Plan& plan(long rows, int K, int N, Epi epi, bool acc, const bf16* bias) {
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

  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DevBuf ws_;
  std::map<std::tuple<long, int, int, int, int>, Plan> plans_;
  int fallbacks_ = 0;
};

struct LayerW {  // latent decoder self-attention layer
  bf16 *qkv = nullptr, *qkv_b = nullptr, *proj = nullptr, *proj_b = nullptr, *up = nullptr, *up_b = nullptr,
       *dn = nullptr, *dn_b = nullptr;
  float *qn = nullptr, *kn = nullptr;
};

struct EventPair {
  cudaEvent_t a = nullptr, b = nullptr;
};

}  // namespace

struct CudaShapeEngine::Impl {
  ShapeConfig cfg;
  ShapeEngineOptions opts;
  int attn_mt = 2;  // query m16 tiles per attention warp at head dim 64 (CUBEFORGE_SHAPE_ATTN_MT=1: session 18's kernel)
  int N = 0, Npad = 0, W = 0, H = 0, HD = 0, E = 0, codes = 0, nf = 0, F = 0, Fpad = 0, CPL = 0, Mt = 0;
  bool full_rows = true;  // W a multiple of 256: the row kernels' compile-time-width instantiations
  float eps = 1e-6f;
  cudaStream_t stream = nullptr;
  size_t total_bytes = 0, weights_bytes = 0;  // before gemm: its workspace reports into total_bytes
  Gemm gemm;
  std::string dev_name;
  std::vector<void*> fixed;  // weight arena and fixed buffers

  // weights
  float* codebook = nullptr;  // [codes][E] normalized (fp32)
  bf16 *c_out_w = nullptr, *c_out_b = nullptr;
  float* pos = nullptr;       // [N][W]
  std::vector<LayerW> layers;
  bf16 *in_w = nullptr, *in_b = nullptr;  // [W][Fpad], [W]
  float* in_b_f = nullptr;                // bf16-rounded fp32 copy for the table path
  float *embed_w = nullptr, *carrier = nullptr, *axis = nullptr;  // [3][nf], [nf], rb-9 axis coordinates
  float* table = nullptr;                 // [3][Mt][W]
  bf16 *out_w = nullptr, *out_b = nullptr, *q_w = nullptr, *q_b = nullptr, *kv_w = nullptr, *kv_b = nullptr,
       *oproj_w = nullptr, *oproj_b = nullptr, *oup_w = nullptr, *oup_b = nullptr, *odn_w = nullptr, *odn_b = nullptr;
  float *lnf_w = nullptr, *lnf_b = nullptr, *head_w = nullptr;
  float head_b = 0.0f;

  // latent decoder state / scratch (rows <= N)
  float* lat = nullptr;  // [N][W] fp32 residual stream = latents
  int lat_rows = 0;
  int* ids_d = nullptr;
  bf16 *lt = nullptr, *lqkv = nullptr, *lq = nullptr, *lK = nullptr, *lVt = nullptr, *latt = nullptr, *lo = nullptr,
       *lu = nullptr;
  bf16 *occK = nullptr, *occVt = nullptr, *kvtmp = nullptr;  // the current shape's cross-attention K/V
  bool have_shape = false;

  // network chunk scratch
  size_t chunk = 0;
  DevBuf bufA, bufB, bufQ, bufU, bufOut, bufXyz;

  // grids
  DevBuf values, bits, flagA, refine, list, cubtmp, vcnt, fcnt, voff, foff, mpos, mtris;
  int64_t* num_d = nullptr;
  int64_t* num_h = nullptr;  // pinned
  uint32_t* u32_h = nullptr;  // pinned
  int grid_rb = -1;          // rb of the grid on the device (-1: none)
  bool grid_on_host = false;
  GridValues host_grid;      // when the grid fell back to the host
  std::vector<EventPair> ev_pool;
  size_t ev_used = 0;

  ~Impl() {
    for (auto& e : ev_pool) {
      cudaEventDestroy(e.a);
      cudaEventDestroy(e.b);
    }
    for (DevBuf* b : {&bufA, &bufB, &bufQ, &bufU, &bufOut, &bufXyz, &values, &bits, &flagA, &refine, &list, &cubtmp,
                      &vcnt, &fcnt, &voff, &foff, &mpos, &mtris})
      b->release();
    for (void* p : fixed) cudaFree(p);
    if (num_h) cudaFreeHost(num_h);
    if (u32_h) cudaFreeHost(u32_h);
    if (stream) cudaStreamDestroy(stream);
  }

  void track(DevBuf& b) { b.total = &total_bytes; }

  template <typename T>
  T* dalloc(size_t count) {
    void* p = nullptr;
    const size_t bytes = round_up(std::max<size_t>(count * sizeof(T), 16), 256);
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      throw DeviceOom("CUDA shape: out of device memory allocating " + std::to_string(bytes >> 20) + " MiB");
    }
    fixed.push_back(p);
    total_bytes += bytes;
    CF_CUDA(cudaMemset(p, 0, bytes));
    return static_cast<T*>(p);
  }
  bf16* upload_bf16(const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = to_bf16_bits(v[i]);
    bf16* d = dalloc<bf16>(v.size());
    CF_CUDA(cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    weights_bytes += h.size() * 2;
    return d;
  }
  float* upload_f32(const std::vector<float>& v) {
    float* d = dalloc<float>(v.size());
    CF_CUDA(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    weights_bytes += v.size() * 4;
    return d;
  }

  EventPair& next_events() {
    if (ev_used == ev_pool.size()) {
      EventPair e;
      CF_CUDA(cudaEventCreate(&e.a));
      CF_CUDA(cudaEventCreate(&e.b));
      ev_pool.push_back(e);
    }
    return ev_pool[ev_used++];
  }
  double drain_events() {  // after a synchronize: sum of the used pairs, then reset
    double ms = 0;
    for (size_t i = 0; i < ev_used; ++i) {
      float t = 0;
      CF_CUDA(cudaEventElapsedTime(&t, ev_pool[i].a, ev_pool[i].b));
      ms += t;
    }
    ev_used = 0;
    return ms;
  }

  // ---- kernels with width / head-dim dispatch (host switches over template instantiations) -----------------------
  // Row kernels: CPL = ceil(W / 256) vectors of 8 per lane; full_rows (W % 256 == 0) picks the compile-time-width
  // instantiation (the full-size model's code), else the masked one with W passed at run time.
  template <typename Launch>
  void rows_dispatch(const Launch& launch) {
#define CF_ROWS_CASE(c)                                                                          \
  case c:                                                                                        \
    if (full_rows) launch(std::integral_constant<int, c>{}, std::true_type{});                   \
    else launch(std::integral_constant<int, c>{}, std::false_type{});                            \
    break;
    switch (CPL) {
      CF_ROWS_CASE(1)
      CF_ROWS_CASE(2)
      CF_ROWS_CASE(3)
      CF_ROWS_CASE(4)
      default: throw Error("CUDA shape: width " + std::to_string(W) + " above 1024");
    }
#undef CF_ROWS_CASE
    CF_CHECK_LAUNCH();
  }
  template <typename Launch>
  void hd_dispatch(const Launch& launch) {
    switch (HD) {
      case 8: launch(std::integral_constant<int, 8>{}); break;
      case 16: launch(std::integral_constant<int, 16>{}); break;
      case 32: launch(std::integral_constant<int, 32>{}); break;
      case 64: launch(std::integral_constant<int, 64>{}); break;
      case 128: launch(std::integral_constant<int, 128>{}); break;
      default: throw Error("CUDA shape: head_dim " + std::to_string(HD) + " has no kernel");
    }
    CF_CHECK_LAUNCH();
  }
  void ln_bf16(const bf16* x, bf16* y, long rows) {
    const unsigned b = blocks_for(size_t(rows), 8);
    rows_dispatch([&](auto cpl, auto full) {
      ln_bf16_kernel<decltype(cpl)::value, decltype(full)::value><<<b, 256, 0, stream>>>(x, y, rows, eps, W);
    });
  }
  void resid_ln(float* h, const bf16* o, bf16* t, long rows) {
    const unsigned b = blocks_for(size_t(rows), 8);
    rows_dispatch([&](auto cpl, auto full) {
      resid_ln_f32_kernel<decltype(cpl)::value, decltype(full)::value><<<b, 256, 0, stream>>>(h, o, t, rows, eps, W);
    });
  }
  void head(const bf16* q0, long rows, float* out, const PointSet& ps, float* vals, uint32_t* bts) {
    const unsigned b = blocks_for(size_t(rows), 8 * kHeadRows);  // 8 warps of kHeadRows rows
    rows_dispatch([&](auto cpl, auto full) {
      head_kernel<decltype(cpl)::value, decltype(full)::value><<<b, 256, 0, stream>>>(
          q0, rows, eps, lnf_w, lnf_b, head_w, head_b, out, ps, vals, bts, W);
    });
  }
  void attention(const bf16* Q, int q_stride, long P, const bf16* K, const bf16* Vt, int Nkv, bf16* O, int o_stride) {
    if (P <= 0) return;
    const float scale_log2 = float(1.0 / std::sqrt(double(HD)) * 1.4426950408889634);
    const dim3 grid(unsigned((P + kAttnRows - 1) / kAttnRows), unsigned(H));
    hd_dispatch([&](auto hd) {
      constexpr int kHd = decltype(hd)::value;
      if constexpr (kHd == 64)  // session 24: two m16 tiles per warp at the full-size model's head dim
        if (attn_mt == 2) {
          attention_kernel<64, 2><<<grid, attn_threads(2), 0, stream>>>(Q, q_stride, int(P), K, Vt, Nkv, Npad,
                                                                        scale_log2, O, o_stride);
          return;
        }
      attention_kernel<kHd><<<grid, attn_threads(1), 0, stream>>>(Q, q_stride, int(P), K, Vt, Nkv, Npad, scale_log2, O,
                                                                  o_stride);
    });
  }
  void split_heads(const bf16* src, int src_stride, int T, int q_off, int k_off, int v_off, const float* qn,
                   const float* kn, bf16* Qo, bf16* K, bf16* Vt) {
    const size_t warps = size_t(T) * H;
    hd_dispatch([&](auto hd) {
      split_heads_kernel<decltype(hd)::value><<<blocks_for(warps, 8), 256, 0, stream>>>(
          src, src_stride, T, H, q_off, k_off, v_off, qn, kn, Qo, K, Vt, Npad);
    });
  }

  // ---- latent side -------------------------------------------------------------------------------------------------
  // lat (T rows) → t = bf16(LN(lat)) → cross-attention keys/values of the occupancy decoder.
  void occupancy_kv(int T, bool ln_needed) {
    if (ln_needed) resid_ln(lat, nullptr, lt, T);
    CF_CUDA(cudaMemsetAsync(occK, 0, size_t(H) * Npad * HD * 2, stream));
    CF_CUDA(cudaMemsetAsync(occVt, 0, size_t(H) * Npad * HD * 2, stream));
    gemm.run(stream, lt, T, W, kv_w, 2 * W, kv_b, kvtmp, Gemm::kBias, false);
    split_heads(kvtmp, 2 * W, T, -1, 0, W, nullptr, nullptr, nullptr, occK, occVt);
    lat_rows = T;
    have_shape = true;
  }

  void run_decoder(int T) {
    resid_ln(lat, nullptr, lt, T);
    CF_CUDA(cudaMemsetAsync(lK, 0, size_t(H) * Npad * HD * 2, stream));
    CF_CUDA(cudaMemsetAsync(lVt, 0, size_t(H) * Npad * HD * 2, stream));
    for (const LayerW& L : layers) {
      gemm.run(stream, lt, T, W, L.qkv, 3 * W, L.qkv_b, lqkv, Gemm::kBias, false);
      split_heads(lqkv, 3 * W, T, 0, W, 2 * W, L.qn, L.kn, lq, lK, lVt);
      attention(lq, W, T, lK, lVt, T, latt, W);
      gemm.run(stream, latt, T, W, L.proj, W, L.proj_b, lo, Gemm::kBias, false);
      resid_ln(lat, lo, lt, T);
      gemm.run(stream, lt, T, W, L.up, 4 * W, L.up_b, lu, Gemm::kBias, false);
      bias_act_kernel<<<blocks_for(size_t(T) * (4 * W / 8), 256), 256, 0, stream>>>(lu, T, 4 * W, nullptr, kActGelu);
      CF_CHECK_LAUNCH();
      gemm.run(stream, lu, T, 4 * W, L.dn, W, L.dn_b, lo, Gemm::kBias, false);
      resid_ln(lat, lo, lt, T);  // t = LN(h) feeds the next layer (and, after the last, the occupancy K/V)
    }
  }

  // ---- network over points ----------------------------------------------------------------------------------------
  // Evaluates `count` points: grid points of ps (general == false) or the device xyz array (general == true).
  // Results: out[p] (if out; out_local: every chunk writes out[0..n), a scratch) and/or values[flat] + bits (if
  // vals). Chunked; cancel polled between chunks.
  void run_network(const PointSet& ps, size_t count, const float* xyz, float* out, bool out_local, float* vals,
                   uint32_t* bts, const std::atomic<bool>* cancel, int* chunks) {
    for (size_t c0 = 0; c0 < count; c0 += chunk) {
      if (cancel && cancel->load()) throw Cancelled();
      const size_t n = std::min(chunk, count - c0);
      const long rows = long(round_up(n, 256));  // GEMM rows (padding rows hold stale, finite-or-not junk; unused)
      PointSet p = ps;
      if (p.list) p.list += c0;
      else p.start += uint32_t(c0);
      bf16* A = bufA.as<bf16>();
      bf16* B = bufB.as<bf16>();
      bf16* Qb = bufQ.as<bf16>();
      bf16* U = bufU.as<bf16>();
      if (xyz) {
        fourier_kernel<<<blocks_for(n * Fpad, 256), 256, 0, stream>>>(xyz + 3 * c0, n, embed_w, carrier, nf, Fpad, U);
        CF_CHECK_LAUNCH();
        gemm.run(stream, U, rows, Fpad, in_w, W, in_b, A, Gemm::kBias, false);
        bias_act_kernel<<<blocks_for(size_t(rows) * (W / 8), 256), 256, 0, stream>>>(A, rows, W, nullptr, kActSilu);
        CF_CHECK_LAUNCH();
      } else {
        grid_h1_kernel<<<blocks_for(n * (W / 8), 256), 256, 0, stream>>>(p, n, table, Mt, in_b_f, W, A);
        CF_CHECK_LAUNCH();
      }
      gemm.run(stream, A, rows, W, out_w, W, out_b, B, Gemm::kBias, false);  // q0
      ln_bf16(B, A, long(n));
      gemm.run(stream, A, rows, W, q_w, W, q_b, Qb, Gemm::kBias, false);
      attention(Qb, W, long(n), occK, occVt, lat_rows, A, W);
      gemm.run(stream, A, rows, W, oproj_w, W, oproj_b, B, Gemm::kBias, true);  // q0 += c_proj(att)
      ln_bf16(B, A, long(n));
      if (opts.exact_gelu) {
        gemm.run(stream, A, rows, W, oup_w, 4 * W, oup_b, U, Gemm::kBias, false);
        bias_act_kernel<<<blocks_for(size_t(rows) * (4 * W / 8), 256), 256, 0, stream>>>(U, rows, 4 * W, nullptr,
                                                                                          kActGelu);
        CF_CHECK_LAUNCH();
      } else {
        gemm.run(stream, A, rows, W, oup_w, 4 * W, oup_b, U, Gemm::kGeluBias, false);
      }
      gemm.run(stream, U, rows, 4 * W, odn_w, W, odn_b, B, Gemm::kBias, true);  // q0 += MLP
      head(B, long(n), out ? (out_local ? out : out + c0) : nullptr, p, vals, bts);
      if (chunks) ++*chunks;
    }
  }

  void ensure_chunk_buffers() {
    for (DevBuf* b : {&bufA, &bufB, &bufQ, &bufU, &bufOut, &bufXyz}) track(*b);
    while (true) {
      try {
        bufA.ensure(chunk * W * 2);
        bufB.ensure(chunk * W * 2);
        bufQ.ensure(chunk * W * 2);
        bufU.ensure(chunk * std::max(4 * W, Fpad) * 2);
        bufOut.ensure(chunk * 4);
        bufXyz.ensure(chunk * 12);
        for (DevBuf* b : {&bufA, &bufB, &bufQ, &bufU}) CF_CUDA(cudaMemset(b->p, 0, b->bytes));
        return;
      } catch (const DeviceOom& e) {
        for (DevBuf* b : {&bufA, &bufB, &bufQ, &bufU, &bufOut, &bufXyz}) b->release();
        if (chunk <= 4096) throw;
        chunk = std::max<size_t>(4096, round_up(chunk / 2, 256));
        std::fprintf(stderr, "%s; network chunk reduced to %zu points\n", e.what(), chunk);
      }
    }
  }

  // ---- grids --------------------------------------------------------------------------------------------------------
  void analytic(const PointSet& ps, size_t count, const AnalyticShape& a, float* vals, uint32_t* bts) {
    if (!count) return;
    analytic_kernel<<<blocks_for(count, 256), 256, 0, stream>>>(ps, count, axis, int(a.kind), a.a, a.b, vals, bts);
    CF_CHECK_LAUNCH();
  }
  // The points of one level: network and/or analytic values into the grid, per the options.
  void eval_points(const PointSet& ps, size_t count, const GpuGridOptions& o, uint32_t* bts, GpuGridStats& st) {
    if (!count) return;
    float* vals = values.as<float>();
    const bool ana = o.analytic.kind != AnalyticShape::None;
    if (!ana || o.network_on_analytic_points) {
      if (!have_shape) throw Error("CUDA shape: no latents bound (decode_tokens or set_latents first)");
      const EventPair e = next_events();
      CF_CUDA(cudaEventRecord(e.a, stream));
      run_network(ps, count, nullptr, ana ? bufOut.as<float>() : nullptr, true, ana ? nullptr : vals,
                  ana ? nullptr : bts, o.cancel, &st.chunks);
      CF_CUDA(cudaEventRecord(e.b, stream));
    }
    if (ana) analytic(ps, count, o.analytic, vals, bts);
    st.points += count;
  }

  double decode_ids(const std::vector<int>& ids);  // N ids (row `codes` = mean code) -> latents + K/V, device ms

  int64_t select_count() {
    CF_CUDA(cudaMemcpyAsync(num_h, num_d, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    CF_CUDA(cudaStreamSynchronize(stream));
    return *num_h;
  }

  template <typename Pred>
  int64_t select(Pred pred, size_t num_items) {
    size_t tmp = 0;
    CF_CUDA(cub::DeviceSelect::If(nullptr, tmp, thrust::counting_iterator<uint32_t>(0), list.as<uint32_t>(), num_d,
                                  int64_t(num_items), pred, stream));
    cubtmp.ensure(tmp);
    tmp = cubtmp.bytes;
    CF_CUDA(cub::DeviceSelect::If(cubtmp.p, tmp, thrust::counting_iterator<uint32_t>(0), list.as<uint32_t>(), num_d,
                                  int64_t(num_items), pred, stream));
    return select_count();
  }

  void device_grid(int rb, const GpuGridOptions& o, GpuGridStats& st) {
    const uint32_t M = uint32_t(grid_points_per_axis(rb));
    const size_t total = size_t(M) * M * M;
    const int rc = std::clamp(o.coarse_rb, kMinResolutionBase, rb);
    const bool adaptive = o.adaptive && rc < rb;
    if (o.dilation < 0) throw Error("CUDA shape grid: negative dilation");
    if (o.final_dilation < -1) throw Error("CUDA shape grid: final_dilation below -1");
    for (DevBuf* b : {&values, &bits, &flagA, &refine, &list, &cubtmp}) track(*b);
    values.ensure(total * 4);
    if (adaptive) {
      bits.ensure(round_up(total, 32) / 8);
      flagA.ensure(size_t(1) << (3 * (rb - 1)));
      refine.ensure(size_t(1) << (3 * (rb - 1)));
      list.ensure(total * 4);
    }
    grid_rb = -1;
    const uint32_t shift = uint32_t(kTableMaxRb - rb);
    float* vals = values.as<float>();
    uint32_t* bts = adaptive ? bits.as<uint32_t>() : nullptr;
    if (!adaptive) {
      PointSet ps{nullptr, 0, M, 1, M, shift};
      eval_points(ps, total, o, nullptr, st);
      st.points_per_level = {total};
      grid_rb = rb;
      return;
    }
    CF_CUDA(cudaMemsetAsync(bts, 0, bits.bytes, stream));
    {  // level rc: every point
      const uint32_t n0 = (1u << rc) + 1, s0 = 1u << (rb - rc);
      PointSet ps{nullptr, 0, n0, s0, M, shift};
      const size_t cnt = size_t(n0) * n0 * n0;
      eval_points(ps, cnt, o, bts, st);
      st.points_per_level.push_back(cnt);
      const uint32_t nc = 1u << rc;
      flag_cells_kernel<<<blocks_for(size_t(nc) * nc * nc, 256), 256, 0, stream>>>(vals, M, nc, s0, o.margin, nullptr,
                                                                                    0, flagA.as<uint8_t>());
      CF_CHECK_LAUNCH();
    }
    for (int L = rc + 1; L <= rb; ++L) {
      if (o.cancel && o.cancel->load()) throw Cancelled();
      const uint32_t np = 1u << (L - 1), s = 1u << (rb - L), n = 2 * np + 1;
      const int dil = (L == rb && o.final_dilation >= 0) ? o.final_dilation : o.dilation;  // grid.h rule 3
      dilate_kernel<<<blocks_for(size_t(np) * np * np, 256), 256, 0, stream>>>(flagA.as<uint8_t>(), np, dil,
                                                                               refine.as<uint8_t>());
      CF_CHECK_LAUNCH();
      const int64_t cnt = select(NeedPoint{refine.as<uint8_t>(), bts, np, n, s, M}, size_t(n) * n * n);
      PointSet ps{list.as<uint32_t>(), 0, n, s, M, shift};
      eval_points(ps, size_t(cnt), o, bts, st);
      st.points_per_level.push_back(size_t(cnt));
      for (int pass = 0; pass < 3; ++pass) {
        const size_t ne = np + 1;
        const size_t work = pass == 0 ? ne * ne * np : pass == 1 ? ne * np * n : size_t(np) * n * n;
        interp_kernel<<<blocks_for(work, 256), 256, 0, stream>>>(vals, bts, M, n, s, pass);
        CF_CHECK_LAUNCH();
      }
      if (L < rb) {
        const uint32_t nc = 2 * np;
        const float margin = o.scale_margin ? std::ldexp(o.margin, rc - L) : o.margin;  // grid.h rule 2
        flag_cells_kernel<<<blocks_for(size_t(nc) * nc * nc, 256), 256, 0, stream>>>(
            vals, M, nc, s, margin, refine.as<uint8_t>(), np, flagA.as<uint8_t>());
        CF_CHECK_LAUNCH();
      }
    }
    grid_rb = rb;
  }

  Mesh device_mc(const MarchingCubesOptions& mo) {
    const uint32_t M = uint32_t(grid_points_per_axis(grid_rb));
    const size_t total = size_t(M) * M * M;
    for (DevBuf* b : {&list, &vcnt, &fcnt, &voff, &foff, &mpos, &mtris, &cubtmp}) track(*b);
    list.ensure(total * 4);
    McGrid g{values.as<float>(), M, mo.iso};
    const int64_t na64 = select(McActive{g}, total);
    Mesh mesh;
    if (na64 <= 0) return mesh;  // no surface
    const uint32_t na = uint32_t(na64);
    vcnt.ensure((size_t(na) + 1) * 4);
    fcnt.ensure((size_t(na) + 1) * 4);
    voff.ensure((size_t(na) + 1) * 4);
    foff.ensure((size_t(na) + 1) * 4);
    CF_CUDA(cudaMemsetAsync(vcnt.as<uint32_t>() + na, 0, 4, stream));
    CF_CUDA(cudaMemsetAsync(fcnt.as<uint32_t>() + na, 0, 4, stream));
    mc_count_kernel<<<blocks_for(na, 256), 256, 0, stream>>>(g, list.as<uint32_t>(), na, vcnt.as<uint32_t>(),
                                                             fcnt.as<uint32_t>());
    CF_CHECK_LAUNCH();
    size_t tmp = 0;
    CF_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tmp, vcnt.as<uint32_t>(), voff.as<uint32_t>(), int64_t(na) + 1,
                                          stream));
    cubtmp.ensure(tmp);
    tmp = cubtmp.bytes;
    CF_CUDA(cub::DeviceScan::ExclusiveSum(cubtmp.p, tmp, vcnt.as<uint32_t>(), voff.as<uint32_t>(), int64_t(na) + 1,
                                          stream));
    tmp = cubtmp.bytes;
    CF_CUDA(cub::DeviceScan::ExclusiveSum(cubtmp.p, tmp, fcnt.as<uint32_t>(), foff.as<uint32_t>(), int64_t(na) + 1,
                                          stream));
    CF_CUDA(cudaMemcpyAsync(u32_h, voff.as<uint32_t>() + na, 4, cudaMemcpyDeviceToHost, stream));
    CF_CUDA(cudaMemcpyAsync(u32_h + 1, foff.as<uint32_t>() + na, 4, cudaMemcpyDeviceToHost, stream));
    CF_CUDA(cudaStreamSynchronize(stream));
    const uint32_t nv = u32_h[0], nfc = u32_h[1];
    mpos.ensure(size_t(nv) * 12 + 16);
    mtris.ensure(size_t(nfc) * 12 + 16);
    const int mapping = mo.mapping == VertexMapping::NewWarp ? 0 : mo.mapping == VertexMapping::OldWarpCentred ? 1 : 2;
    mc_vertex_kernel<<<blocks_for(na, 256), 256, 0, stream>>>(g, list.as<uint32_t>(), na, voff.as<uint32_t>(), mapping,
                                                              2.0 * kGridHalfExtent, kGridHalfExtent,
                                                              mpos.as<float>());
    CF_CHECK_LAUNCH();
    mc_face_kernel<<<blocks_for(na, 256), 256, 0, stream>>>(g, list.as<uint32_t>(), na, voff.as<uint32_t>(),
                                                            foff.as<uint32_t>(), mo.reverse_winding ? 1 : 0,
                                                            mtris.as<uint32_t>());
    CF_CHECK_LAUNCH();
    mesh.positions.resize(nv);
    mesh.triangles.resize(nfc);
    static_assert(sizeof(Vec3) == 12 && sizeof(std::array<uint32_t, 3>) == 12, "packed mesh arrays");
    CF_CUDA(cudaMemcpyAsync(mesh.positions.data(), mpos.p, size_t(nv) * 12, cudaMemcpyDeviceToHost, stream));
    CF_CUDA(cudaMemcpyAsync(mesh.triangles.data(), mtris.p, size_t(nfc) * 12, cudaMemcpyDeviceToHost, stream));
    CF_CUDA(cudaStreamSynchronize(stream));
    return mesh;
  }
};

// ---- construction ---------------------------------------------------------------------------------------------------

CudaShapeEngine::CudaShapeEngine() : impl_(new Impl) {}
CudaShapeEngine::~CudaShapeEngine() = default;

std::unique_ptr<CudaShapeEngine> CudaShapeEngine::create(const ShapeConfig& cfg, const ShapeWeightSource& src,
                                                         const ShapeEngineOptions& opts) {
  std::string why;
  if (!cuda_available(&why)) throw Error("CUDA shape engine unavailable: " + why);
  if (cfg.num_heads <= 0 || cfg.width <= 0 || cfg.width % cfg.num_heads != 0)
    throw Error("CUDA shape engine: width " + std::to_string(cfg.width) + " is not a multiple of num_heads " +
                std::to_string(cfg.num_heads));
  const int hd = cfg.width / cfg.num_heads;
  if (hd != 8 && hd != 16 && hd != 32 && hd != 64 && hd != 128)
    throw Error("CUDA shape engine: head_dim must be 8, 16, 32, 64 or 128 (width " + std::to_string(cfg.width) + ", " +
                std::to_string(cfg.num_heads) + " heads: head_dim " + std::to_string(hd) + ")");
  if (cfg.width > 1024)  // row kernels: at most 4 vectors of 8 per lane (width % 8 == 0 follows from head_dim)
    throw Error("CUDA shape engine: width must be at most 1024, got " + std::to_string(cfg.width));
  if (cfg.num_freqs < 1 || cfg.embed_dim < 1 || cfg.num_codes < 1 || cfg.num_encoder_latents < 1)
    throw Error("CUDA shape engine: num_freqs, embed_dim, num_codes and num_encoder_latents must be positive");
  if (cfg.out_dim != 1) throw Error("CUDA shape engine: out_dim must be 1");
  if (!src.get) throw Error("CUDA shape engine: no weight source");

  std::unique_ptr<CudaShapeEngine> e(new CudaShapeEngine());
  Impl& m = *e->impl_;
  m.cfg = cfg;
  m.opts = opts;
  if (const char* mt = std::getenv("CUBEFORGE_SHAPE_ATTN_MT")) m.attn_mt = std::atoi(mt) == 1 ? 1 : 2;
  m.N = cfg.num_encoder_latents;
  m.Npad = int(round_up(size_t(m.N), kAttnTile));
  m.W = cfg.width;
  m.H = cfg.num_heads;
  m.E = cfg.embed_dim;
  m.codes = cfg.num_codes;
  m.nf = cfg.num_freqs;
  m.F = cfg.fourier_dim();
  m.Fpad = int(round_up(size_t(m.F), 8));
  m.HD = hd;
  m.CPL = (m.W + 255) / 256;
  m.full_rows = m.W % 256 == 0;
  m.eps = cfg.eps;
  m.Mt = grid_points_per_axis(kTableMaxRb);
  const int W = m.W, N = m.N;

  int dev = 0;
  CF_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CF_CUDA(cudaGetDeviceProperties(&prop, dev));
  m.dev_name = prop.name;
  CF_CUDA(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  m.gemm.init(&m.total_bytes);

  auto get = [&](const std::string& name, std::vector<int64_t> shape) {
    std::vector<float> v = src.get(name, shape);
    size_t n = 1;
    for (auto d : shape) n *= size_t(d);
    if (v.size() != n)
      throw Error("CUDA shape engine: tensor " + name + " has " + std::to_string(v.size()) + " values, expected " +
                  std::to_string(n));
    return v;
  };
  auto cat = [](std::vector<float> a, const std::vector<float>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };

  // codebook (§2.3): RMSNorm_1e-5(codebook ⊙ cb_weight + cb_bias) ⊙ norm.weight, fp32
  {
    const int E = m.E;
    std::vector<float> cb = get("bottleneck.block.codebook.weight", {m.codes, E});
    const auto cw = get("bottleneck.block.cb_weight", {E}), cbb = get("bottleneck.block.cb_bias", {E}),
               nw = get("bottleneck.block.norm.weight", {E});
    for (int c = 0; c < m.codes; ++c) {
      float* r = cb.data() + size_t(c) * E;
      float ss = 0;
      for (int i = 0; i < E; ++i) {
        r[i] = r[i] * cw[i] + cbb[i];
        ss += r[i] * r[i];
      }
      const float inv = 1.0f / std::sqrt(ss / float(E) + 1e-5f);
      for (int i = 0; i < E; ++i) r[i] = r[i] * inv * nw[i];
    }
    // row `codes`: the mean normalized code (double sums, as ShapeModel's PreviewFill::MeanCode) for previews
    std::vector<double> mean(E, 0.0);
    for (int c = 0; c < m.codes; ++c)
      for (int i = 0; i < E; ++i) mean[i] += cb[size_t(c) * E + i];
    for (int i = 0; i < E; ++i) cb.push_back(float(mean[i] / m.codes));
    m.codebook = m.upload_f32(cb);
    m.c_out_w = m.upload_bf16(get("bottleneck.block.c_out.weight", {W, E}));
    m.c_out_b = m.upload_bf16(get("bottleneck.block.c_out.bias", {W}));
  }
  m.pos = m.upload_f32(get("decoder.positional_encodings", {N, W}));
  for (int i = 0; i < cfg.num_decoder_layers; ++i) {
    const std::string p = "decoder.blocks." + std::to_string(i) + ".";
    LayerW L;
    L.qkv = m.upload_bf16(cat(get(p + "attn.c_qk.weight", {2 * W, W}), get(p + "attn.c_v.weight", {W, W})));
    L.qkv_b = m.upload_bf16(cat(get(p + "attn.c_qk.bias", {2 * W}), get(p + "attn.c_v.bias", {W})));
    L.proj = m.upload_bf16(get(p + "attn.c_proj.weight", {W, W}));
    L.proj_b = m.upload_bf16(get(p + "attn.c_proj.bias", {W}));
    L.up = m.upload_bf16(get(p + "mlp.up_proj.weight", {4 * W, W}));
    L.up_b = m.upload_bf16(get(p + "mlp.up_proj.bias", {4 * W}));
    L.dn = m.upload_bf16(get(p + "mlp.down_proj.weight", {W, 4 * W}));
    L.dn_b = m.upload_bf16(get(p + "mlp.down_proj.bias", {W}));
    L.qn = m.upload_f32(get(p + "attn.q_norm.weight", {m.HD}));
    L.kn = m.upload_f32(get(p + "attn.k_norm.weight", {m.HD}));
    m.layers.push_back(L);
  }

  // occupancy decoder
  const std::string o = "occupancy_decoder.";
  {
    const std::vector<float> ew = get("embedder.weight", {3, m.nf});
    const std::vector<float> carrier = shape::fourier_carrier(m.nf);
    m.embed_w = m.upload_f32(ew);
    m.carrier = m.upload_f32(carrier);
    const std::vector<float> axis = grid_axis_coords(kTableMaxRb);
    m.axis = m.upload_f32(axis);
    const std::vector<float> win = get(o + "query_in.in_layer.weight", {W, m.F});
    std::vector<float> bin = get(o + "query_in.in_layer.bias", {W});
    std::vector<float> wpad(size_t(W) * m.Fpad, 0.0f);
    for (int d = 0; d < W; ++d)
      std::copy(win.begin() + size_t(d) * m.F, win.begin() + size_t(d + 1) * m.F, wpad.begin() + size_t(d) * m.Fpad);
    m.in_w = m.upload_bf16(wpad);
    m.in_b = m.upload_bf16(bin);
    for (float& v : bin) v = bf16_round_host(v);
    m.in_b_f = m.upload_f32(bin);
    // per-axis tables: features of axis a at the rb-9 coordinates (bf16-rounded) x the matching W_in columns
    const int nfe = 2 * m.nf + 1, Mt = m.Mt;
    std::vector<float> feat(size_t(3) * Mt * nfe), wsub(size_t(3) * W * nfe), emb(size_t(m.F));
    for (int a = 0; a < 3; ++a) {
      std::vector<int> cols = {a};
      for (int k = 0; k < m.nf; ++k) cols.push_back(3 + a * m.nf + k);
      for (int k = 0; k < m.nf; ++k) cols.push_back(3 + 3 * m.nf + a * m.nf + k);
      for (int i = 0; i < Mt; ++i) {
        float pt[3] = {0, 0, 0};
        pt[a] = axis[i];
        shape::fourier_embed(pt, 1, ew.data(), carrier.data(), m.nf, emb.data(), size_t(m.F));
        for (int c = 0; c < nfe; ++c) feat[(size_t(a) * Mt + i) * nfe + c] = bf16_round_host(emb[cols[c]]);
      }
      for (int d = 0; d < W; ++d)
        for (int c = 0; c < nfe; ++c)
          wsub[(size_t(a) * W + d) * nfe + c] = bf16_round_host(win[size_t(d) * m.F + cols[c]]);
    }
    float* feat_d = m.upload_f32(feat);
    float* wsub_d = m.upload_f32(wsub);
    m.table = m.dalloc<float>(size_t(3) * Mt * W);
    axis_table_kernel<<<blocks_for(size_t(3) * Mt * W, 256), 256, 0, m.stream>>>(feat_d, wsub_d, Mt, nfe, W, m.table);
    CF_CHECK_LAUNCH();
    CF_CUDA(cudaStreamSynchronize(m.stream));
  }
  m.out_w = m.upload_bf16(get(o + "query_in.out_layer.weight", {W, W}));
  m.out_b = m.upload_bf16(get(o + "query_in.out_layer.bias", {W}));
  m.q_w = m.upload_bf16(get(o + "attn_out.attn.c_q.weight", {W, W}));
  m.q_b = m.upload_bf16(get(o + "attn_out.attn.c_q.bias", {W}));
  m.kv_w = m.upload_bf16(cat(get(o + "attn_out.attn.c_k.weight", {W, W}), get(o + "attn_out.attn.c_v.weight", {W, W})));
  m.kv_b = m.upload_bf16(cat(get(o + "attn_out.attn.c_k.bias", {W}), get(o + "attn_out.attn.c_v.bias", {W})));
  m.oproj_w = m.upload_bf16(get(o + "attn_out.attn.c_proj.weight", {W, W}));
  m.oproj_b = m.upload_bf16(get(o + "attn_out.attn.c_proj.bias", {W}));
  m.oup_w = m.upload_bf16(get(o + "attn_out.mlp.up_proj.weight", {4 * W, W}));
  m.oup_b = m.upload_bf16(get(o + "attn_out.mlp.up_proj.bias", {4 * W}));
  m.odn_w = m.upload_bf16(get(o + "attn_out.mlp.down_proj.weight", {W, 4 * W}));
  m.odn_b = m.upload_bf16(get(o + "attn_out.mlp.down_proj.bias", {W}));
  m.lnf_w = m.upload_f32(get(o + "ln_f.weight", {W}));
  m.lnf_b = m.upload_f32(get(o + "ln_f.bias", {W}));
  {
    std::vector<float> hw = get(o + "c_head.weight", {1, W});
    for (float& v : hw) v = bf16_round_host(v);
    m.head_w = m.upload_f32(hw);
    m.head_b = bf16_round_host(get(o + "c_head.bias", {1})[0]);
  }

  // latent decoder scratch and shape state
  const size_t hp = size_t(m.H) * m.Npad * m.HD;
  m.lat = m.dalloc<float>(size_t(N) * W);
  m.ids_d = m.dalloc<int>(N);
  m.lt = m.dalloc<bf16>(size_t(N) * W);
  m.lqkv = m.dalloc<bf16>(size_t(N) * 3 * W);
  m.lq = m.dalloc<bf16>(size_t(N) * W);
  m.lK = m.dalloc<bf16>(hp);
  m.lVt = m.dalloc<bf16>(hp);
  m.latt = m.dalloc<bf16>(size_t(N) * W);
  m.lo = m.dalloc<bf16>(size_t(N) * W);
  m.lu = m.dalloc<bf16>(size_t(N) * 4 * W);
  m.occK = m.dalloc<bf16>(hp);
  m.occVt = m.dalloc<bf16>(hp);
  m.kvtmp = m.dalloc<bf16>(size_t(N) * 2 * W);
  CF_CUDA(cudaMalloc(&m.num_d, 16));
  m.fixed.push_back(m.num_d);
  CF_CUDA(cudaMallocHost(&m.num_h, 16));
  CF_CUDA(cudaMallocHost(&m.u32_h, 16));

  // marching-cubes tables (the host tables of src/mesh)
  CF_CUDA(cudaMemcpyToSymbol(c_case_start, mc::kCaseStart, sizeof(mc::kCaseStart)));
  CF_CUDA(cudaMemcpyToSymbol(c_tri_edges, mc::kTriEdges, sizeof(mc::kTriEdges)));
  CF_CUDA(cudaMemcpyToSymbol(c_edge, mc::kEdge, sizeof(mc::kEdge)));

  m.chunk = std::max<size_t>(4096, round_up(opts.chunk_points, 256));
  m.ensure_chunk_buffers();
  CF_CUDA(cudaStreamSynchronize(m.stream));
  if (opts.verbose)
    std::fprintf(stderr, "CUDA shape engine on %s: weights %.1f MiB (bf16), %zu MiB on the device, chunk %zu points\n",
                 m.dev_name.c_str(), double(m.weights_bytes) / 1048576.0, m.total_bytes >> 20, m.chunk);
  return e;
}

// ---- latents ----------------------------------------------------------------------------------------------------------

double CudaShapeEngine::decode_tokens(const std::vector<int>& ids) {
  Impl& m = *impl_;
  if (int(ids.size()) != m.N)
    throw Error("CUDA shape decode: expected " + std::to_string(m.N) + " token ids, got " + std::to_string(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= m.codes)
      throw Error("CUDA shape decode: token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is out of range [0, " + std::to_string(m.codes) + ")");
  return m.decode_ids(ids);
}

double CudaShapeEngine::decode_preview(const std::vector<int>& prefix) {
  Impl& m = *impl_;
  if (prefix.empty() || int(prefix.size()) > m.N)
    throw Error("CUDA shape preview: needs 1.." + std::to_string(m.N) + " token ids, got " +
                std::to_string(prefix.size()));
  for (size_t i = 0; i < prefix.size(); ++i)
    if (prefix[i] < 0 || prefix[i] >= m.codes)
      throw Error("CUDA shape preview: token id " + std::to_string(prefix[i]) + " at position " + std::to_string(i) +
                  " is out of range [0, " + std::to_string(m.codes) + ")");
  std::vector<int> ids(prefix);
  ids.resize(size_t(m.N), m.codes);  // device codebook row `codes` = the mean code
  return m.decode_ids(ids);
}

double CudaShapeEngine::Impl::decode_ids(const std::vector<int>& ids) {
  Impl& m = *this;
  m.ev_used = 0;
  const EventPair ev = m.next_events();
  CF_CUDA(cudaMemcpyAsync(m.ids_d, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice, m.stream));
  CF_CUDA(cudaEventRecord(ev.a, m.stream));
  latent_input_kernel<<<blocks_for(size_t(m.N) * m.W, 256), 256, 0, m.stream>>>(m.ids_d, m.N, m.codebook, m.E, m.c_out_w,
                                                                                m.c_out_b, m.pos, m.W, m.lat);
  CF_CHECK_LAUNCH();
  m.run_decoder(m.N);
  m.occupancy_kv(m.N, /*ln_needed=*/false);  // lt = LN(latents) after the last layer
  CF_CUDA(cudaEventRecord(ev.b, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  return m.drain_events();
}

double CudaShapeEngine::set_latents(const Latents& lat) {
  Impl& m = *impl_;
  if (lat.width != m.W || lat.count < 1 || lat.count > m.N || lat.data.size() != size_t(lat.count) * lat.width)
    throw Error("CUDA shape: latents must be 1.." + std::to_string(m.N) + " rows of width " + std::to_string(m.W));
  m.ev_used = 0;
  const EventPair ev = m.next_events();
  CF_CUDA(cudaMemcpyAsync(m.lat, lat.data.data(), lat.data.size() * 4, cudaMemcpyHostToDevice, m.stream));
  CF_CUDA(cudaEventRecord(ev.a, m.stream));
  m.occupancy_kv(lat.count, /*ln_needed=*/true);
  CF_CUDA(cudaEventRecord(ev.b, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  return m.drain_events();
}

Latents CudaShapeEngine::latents() const {
  const Impl& m = *impl_;
  Latents l;
  if (!m.have_shape) return l;
  l.count = m.lat_rows;
  l.width = m.W;
  l.data.resize(size_t(l.count) * l.width);
  CF_CUDA(cudaMemcpyAsync(l.data.data(), m.lat, l.data.size() * 4, cudaMemcpyDeviceToHost, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  return l;
}

// ---- occupancy ----------------------------------------------------------------------------------------------------

void CudaShapeEngine::evaluate(const float* xyz, size_t n, float* out) {
  Impl& m = *impl_;
  if (!m.have_shape) throw Error("CUDA shape: no latents bound (decode_tokens or set_latents first)");
  for (size_t c0 = 0; c0 < n; c0 += m.chunk) {
    const size_t k = std::min(m.chunk, n - c0);
    CF_CUDA(cudaMemcpyAsync(m.bufXyz.p, xyz + 3 * c0, k * 12, cudaMemcpyHostToDevice, m.stream));
    m.run_network(PointSet{}, k, m.bufXyz.as<float>(), m.bufOut.as<float>(), true, nullptr, nullptr, nullptr,
                  nullptr);
    CF_CUDA(cudaMemcpyAsync(out + c0, m.bufOut.p, k * 4, cudaMemcpyDeviceToHost, m.stream));
    CF_CUDA(cudaStreamSynchronize(m.stream));
  }
}

GridValues CudaShapeEngine::grid(int rb, const GpuGridOptions& o, GpuGridStats* stats) {
  Impl& m = *impl_;
  GpuGridStats st;
  const int M = grid_points_per_axis(rb);
  const size_t total = size_t(M) * M * M;
  GridValues g;
  g.rb = rb;
  g.M = M;
  m.grid_on_host = false;
  m.host_grid = GridValues();
  m.ev_used = 0;
  const EventPair all = m.next_events();  // pair 0: the whole grid; then one pair per network pass
  bool device_ok = true;
  try {
    CF_CUDA(cudaEventRecord(all.a, m.stream));
    m.device_grid(rb, o, st);
    CF_CUDA(cudaEventRecord(all.b, m.stream));
    CF_CUDA(cudaStreamSynchronize(m.stream));
  } catch (const DeviceOom& e) {
    device_ok = false;
    CF_CUDA(cudaStreamSynchronize(m.stream));
    m.ev_used = 0;
    for (DevBuf* b : {&m.values, &m.bits, &m.flagA, &m.refine, &m.list, &m.cubtmp}) b->release();
    std::fprintf(stderr, "CUDA shape: %s; the rb-%d grid is built on the host, the GPU evaluates chunks of %zu points\n",
                 e.what(), rb, m.chunk);
  } catch (...) {
    cudaStreamSynchronize(m.stream);
    m.ev_used = 0;
    m.grid_rb = -1;
    throw;
  }
  if (device_ok) {
    float t = 0;
    CF_CUDA(cudaEventElapsedTime(&t, all.a, all.b));
    st.ms = t;
    for (size_t i = 1; i < m.ev_used; ++i) {
      CF_CUDA(cudaEventElapsedTime(&t, m.ev_pool[i].a, m.ev_pool[i].b));
      st.network_ms += t;
    }
    m.ev_used = 0;
    const double t0 = now_ms();
    if (o.copy_values) {
      g.values.resize(total);
      CF_CUDA(cudaMemcpyAsync(g.values.data(), m.values.p, total * 4, cudaMemcpyDeviceToHost, m.stream));
    }
    if (o.copy_evaluated_bits && m.bits.p && st.points_per_level.size() > 1) {
      g.evaluated_bits.resize((total + 63) / 64);
      CF_CUDA(cudaMemcpyAsync(g.evaluated_bits.data(), m.bits.p, g.evaluated_bits.size() * 8, cudaMemcpyDeviceToHost,
                              m.stream));
    }
    CF_CUDA(cudaStreamSynchronize(m.stream));
    st.copy_ms = now_ms() - t0;
    g.points_evaluated = st.points;
    g.points_per_level = st.points_per_level;
    g.evaluator_calls = size_t(st.chunks);
  } else {
    // Host grid (grid.h rules) with the GPU network (or the analytic field on the host) evaluating chunks.
    const double t0 = now_ms();
    FieldFn f;
    if (o.analytic.kind == AnalyticShape::Sphere) f = [r = o.analytic.a](const float* p, size_t n, float* out) {
      for (size_t i = 0; i < n; ++i)
        out[i] = r - std::sqrt(p[3 * i] * p[3 * i] + p[3 * i + 1] * p[3 * i + 1] + p[3 * i + 2] * p[3 * i + 2]);
    };
    else if (o.analytic.kind == AnalyticShape::Torus)
      f = [R = o.analytic.a, r = o.analytic.b](const float* p, size_t n, float* out) {
        for (size_t i = 0; i < n; ++i) {
          const float q = std::sqrt(p[3 * i] * p[3 * i] + p[3 * i + 2] * p[3 * i + 2]) - R;
          out[i] = r - std::sqrt(q * q + p[3 * i + 1] * p[3 * i + 1]);
        }
      };
    else f = [this](const float* p, size_t n, float* out) { evaluate(p, n, out); };
    if (o.adaptive) {
      AdaptiveOptions ao;
      ao.coarse_rb = o.coarse_rb;
      ao.margin = o.margin;
      ao.dilation = o.dilation;
      ao.scale_margin = o.scale_margin;
      ao.final_dilation = o.final_dilation;
      ao.chunk = m.chunk;
      g = evaluate_adaptive(f, rb, ao);
    } else {
      g = evaluate_dense(f, rb, m.chunk);
    }
    st.on_device = false;
    st.ms = now_ms() - t0;
    st.points = g.points_evaluated;
    st.points_per_level = g.points_per_level;
    m.grid_on_host = true;
    m.host_grid = g;
    m.grid_rb = -1;
  }
  if (stats) *stats = st;
  return g;
}

Mesh CudaShapeEngine::marching_cubes(const MarchingCubesOptions& mo, double* ms) {
  Impl& m = *impl_;
  const double t0 = now_ms();
  Mesh mesh;
  if (m.grid_on_host) {
    mesh = ::cubeforge::marching_cubes(m.host_grid, mo);
  } else {
    if (m.grid_rb < 0) throw Error("CUDA shape: marching cubes without a grid (call grid() first)");
    try {
      mesh = m.device_mc(mo);
    } catch (const DeviceOom& e) {
      std::fprintf(stderr, "CUDA shape: %s; marching cubes on the host\n", e.what());
      const int M = grid_points_per_axis(m.grid_rb);
      std::vector<float> v(size_t(M) * M * M);
      CF_CUDA(cudaMemcpy(v.data(), m.values.p, v.size() * 4, cudaMemcpyDeviceToHost));
      mesh = ::cubeforge::marching_cubes(v.data(), M, mo);
    }
  }
  if (ms) *ms = now_ms() - t0;
  return mesh;
}

Mesh CudaShapeEngine::marching_cubes(const float* values, int M, const MarchingCubesOptions& mo) {
  Impl& m = *impl_;
  int rb = -1;
  for (int r = kMinResolutionBase; r <= kMaxResolutionBase; ++r)
    if (grid_points_per_axis(r) == M) rb = r;
  if (rb < 0) throw Error("CUDA marching cubes: M = " + std::to_string(M) + " is not 2^rb + 1 with rb in [4, 9]");
  const size_t total = size_t(M) * M * M;
  m.track(m.values);
  m.values.ensure(total * 4);
  CF_CUDA(cudaMemcpy(m.values.p, values, total * 4, cudaMemcpyHostToDevice));
  m.grid_rb = rb;
  m.grid_on_host = false;
  return m.device_mc(mo);
}

Mesh CudaShapeEngine::tokens_to_mesh(const std::vector<int>& ids, int rb, const GpuGridOptions& go,
                                     const MarchingCubesOptions& mo, ShapeStageTimes* times) {
  const double t0 = now_ms();
  ShapeStageTimes t;
  t.latent_ms = decode_tokens(ids);
  GpuGridOptions o = go;
  o.copy_values = false;
  o.copy_evaluated_bits = false;
  GpuGridStats st;
  grid(rb, o, &st);
  t.grid_ms = st.ms;
  t.points = st.points;
  const int M = grid_points_per_axis(rb);
  t.grid_points = size_t(M) * M * M;
  Mesh mesh = marching_cubes(mo, &t.mc_ms);
  t.total_ms = now_ms() - t0;
  if (times) *times = t;
  return mesh;
}

const ShapeConfig& CudaShapeEngine::config() const { return impl_->cfg; }
size_t CudaShapeEngine::chunk_points() const { return impl_->chunk; }
size_t CudaShapeEngine::vram_bytes() const { return impl_->total_bytes; }
size_t CudaShapeEngine::weight_bytes() const { return impl_->weights_bytes; }
std::string CudaShapeEngine::device_name() const { return impl_->dev_name; }
std::string CudaShapeEngine::gemm_path() const {
  const Gemm& g = impl_->gemm;
  return "cublasLt epilogues: " + std::to_string(g.plans_ok()) + "/" + std::to_string(g.plans()) +
         " GEMM shapes, " + std::to_string(g.fallbacks()) + " fall-backs to cublasGemmEx + bias kernel";
}

}  // namespace cubeforge::cuda
