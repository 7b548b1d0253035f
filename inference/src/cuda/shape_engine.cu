// CudaShapeEngine (cuda_shape.h, issue 8): construction (the bf16 weight arena of the shape decoder, the occupancy
// decoder's per-axis first-layer tables, scratch buffers) and the public API's glue (tokens_to_mesh, accessors). The
// stages: shape_latents.cu, shape_occupancy.cu, shape_grid.cu, shape_mesh.cu; the state: shape_engine_impl.cuh.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cubeforge/cuda_gpt.h"
#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "core/half.h"
#include "shape/shape_kernels.h"
#include "shape_engine_impl.cuh"
#include "shape_gpu_kernels.cuh"

namespace cubeforge::cuda {
namespace shape_detail {

// Per-axis first-layer tables: T[a][i][d] = sum_c feat[a][i][c] * wsub[a][d][c] (fp32; features and weights already
// bf16-rounded on the host). feat: [3][Mt][nfe], wsub: [3][W][nfe].
__global__ void axis_table_kernel(const float* __restrict__ feat, const float* __restrict__ wsub, int Mt, int nfe, int W,
                                  float* __restrict__ table) {
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= size_t(3) * Mt * W) return;
  const int d = int(t % W);
  const int i = int((t / W) % Mt);
  const int a = int(t / (size_t(W) * Mt));
  const float* f = feat + (size_t(a) * Mt + i) * nfe;
  const float* ww = wsub + (size_t(a) * W + d) * nfe;
  float acc = 0.0f;
  for (int c = 0; c < nfe; ++c) acc = fmaf(f[c], ww[c], acc);
  table[t] = acc;
}

}  // namespace shape_detail

// ---- construction ---------------------------------------------------------------------------------------------------

CudaShapeEngine::Impl::~Impl() {
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

template <typename T>
T* CudaShapeEngine::Impl::dalloc(size_t count) {
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

bf16* CudaShapeEngine::Impl::upload_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_bf16(v[i]);
  bf16* d = dalloc<bf16>(v.size());
  CF_CUDA(cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  weights_bytes += h.size() * 2;
  return d;
}

float* CudaShapeEngine::Impl::upload_f32(const std::vector<float>& v) {
  float* d = dalloc<float>(v.size());
  CF_CUDA(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  weights_bytes += v.size() * 4;
  return d;
}

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
    for (float& v : bin) v = round_bf16(v);
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
        for (int c = 0; c < nfe; ++c) feat[(size_t(a) * Mt + i) * nfe + c] = round_bf16(emb[cols[c]]);
      }
      for (int d = 0; d < W; ++d)
        for (int c = 0; c < nfe; ++c)
          wsub[(size_t(a) * W + d) * nfe + c] = round_bf16(win[size_t(d) * m.F + cols[c]]);
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
    for (float& v : hw) v = round_bf16(v);
    m.head_w = m.upload_f32(hw);
    m.head_b = round_bf16(get(o + "c_head.bias", {1})[0]);
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
  m.upload_mc_tables();

  m.chunk = std::max<size_t>(4096, round_up(opts.chunk_points, 256));
  m.ensure_chunk_buffers();
  CF_CUDA(cudaStreamSynchronize(m.stream));
  if (opts.verbose)
    std::fprintf(stderr, "CUDA shape engine on %s: weights %.1f MiB (bf16), %zu MiB on the device, chunk %zu points\n",
                 m.dev_name.c_str(), double(m.weights_bytes) / 1048576.0, m.total_bytes >> 20, m.chunk);
  return e;
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
