// CudaShapeEngine::Impl (cuda_shape.h): the engine's state (weights, latent decoder scratch, network chunk buffers,
// grids) and its methods, declared here for the files that define them (named per group); the latent decoder's
// per-layer weights (LayerW) and the timing event pairs (EventPair).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cub/device/device_select.cuh>
#include <string>
#include <thrust/iterator/counting_iterator.h>
#include <vector>

#include "cubeforge/cuda_shape.h"
#include "cuda_common.cuh"
#include "shape_engine_common.cuh"
#include "shape_gemm.cuh"

namespace cubeforge::cuda {
namespace shape_detail {

struct PointSet;  // shape_gpu_kernels.cuh

struct LayerW {  // latent decoder self-attention layer
  bf16 *qkv = nullptr, *qkv_b = nullptr, *proj = nullptr, *proj_b = nullptr, *up = nullptr, *up_b = nullptr,
       *dn = nullptr, *dn_b = nullptr;
  float *qn = nullptr, *kn = nullptr;
};

struct EventPair {
  cudaEvent_t a = nullptr, b = nullptr;
};

}  // namespace shape_detail

// The engine's files work inside shape_detail's names (kernels, helpers), as the single file before them did.
using namespace shape_detail;
using detail::bf16;

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

  ~Impl();  // shape_engine.cu

  void track(DevBuf& b) { b.total = &total_bytes; }

  // ---- construction (shape_engine.cu) ----------------------------------------------------------------------------
  template <typename T>
  T* dalloc(size_t count);
  bf16* upload_bf16(const std::vector<float>& v);
  float* upload_f32(const std::vector<float>& v);
  void upload_mc_tables();  // shape_mesh.cu: into the constant memory its kernels read

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

  // ---- kernels with width / head-dim dispatch (shape_layers.cu) --------------------------------------------------
  template <typename Launch>
  void rows_dispatch(const Launch& launch);
  template <typename Launch>
  void hd_dispatch(const Launch& launch);
  void ln_bf16(const bf16* x, bf16* y, long rows);
  void resid_ln(float* h, const bf16* o, bf16* t, long rows);
  void head(const bf16* q0, long rows, float* out, const PointSet& ps, float* vals, uint32_t* bts);
  void attention(const bf16* Q, int q_stride, long P, const bf16* K, const bf16* Vt, int Nkv, bf16* O, int o_stride);
  void split_heads(const bf16* src, int src_stride, int T, int q_off, int k_off, int v_off, const float* qn,
                   const float* kn, bf16* Qo, bf16* K, bf16* Vt);

  // ---- latent side (shape_latents.cu) ----------------------------------------------------------------------------
  void occupancy_kv(int T, bool ln_needed);
  void run_decoder(int T);
  double decode_ids(const std::vector<int>& ids);  // N ids (row `codes` = mean code) -> latents + K/V, device ms

  // ---- network over points (shape_occupancy.cu) ------------------------------------------------------------------
  void run_network(const PointSet& ps, size_t count, const float* xyz, float* out, bool out_local, float* vals,
                   uint32_t* bts, const std::atomic<bool>* cancel, int* chunks);
  void ensure_chunk_buffers();

  // ---- grids (shape_grid.cu); select also serves shape_mesh.cu ---------------------------------------------------
  void analytic(const PointSet& ps, size_t count, const AnalyticShape& a, float* vals, uint32_t* bts);
  void eval_points(const PointSet& ps, size_t count, const GpuGridOptions& o, uint32_t* bts, GpuGridStats& st);

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

  void device_grid(int rb, const GpuGridOptions& o, GpuGridStats& st);

  // ---- marching cubes (shape_mesh.cu) ----------------------------------------------------------------------------
  Mesh device_mc(const MarchingCubesOptions& mo);
};

}  // namespace cubeforge::cuda
