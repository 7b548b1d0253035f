// Generic-width CUDA GPT engine (gpt_generic.h): weight arena (bf16 Linear weights, fp32 norms and wte), fp32 KV
// caches, cond-stream prefill, and a decode step of plain kernels (gpt_generic_kernels.cuh) that reads the position
// from the device, captured as CUDA graphs of several steps (or run eagerly); tokens come back through mapped pinned
// memory and events, the host checks cancellation between launches.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "gpt_generic.h"
#include "gpt_generic_kernels.cuh"
#include "token_stream.h"

namespace cubeforge::cuda {
using namespace generic;

namespace {

using detail::DeviceAllocations;
using detail::host_ms;
double now_ms() { return host_ms(); }

uint16_t to_bf16_rne(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

std::string dual_name(int i) { return "transformer.dual_blocks." + std::to_string(i) + "."; }
std::string single_name(int i) { return "transformer.single_blocks." + std::to_string(i) + "."; }

// One block's weights: x side (shape stream, decode) and c side (cond stream, prefill; dual blocks only).
struct BlockW {  // arena offsets (0: absent; nothing real sits at offset 0 once qkv is reserved first)
  size_t qkv = 0, qkv_b = 0, qn = 0, kn = 0, o = 0, o_b = 0, gu = 0, gu_b = 0, dn = 0, dn_b = 0;
};
struct BlockPtr {
  const bf16 *qkv = nullptr, *qkv_b = nullptr, *o = nullptr, *o_b = nullptr, *gu = nullptr, *gu_b = nullptr,
             *dn = nullptr, *dn_b = nullptr;
  const float *qn = nullptr, *kn = nullptr;
};

}  // namespace

struct GenericGptEngine::Impl {
  GptConfig cfg;
  EngineOptions opts;
  int D = 0, H = 0, hd = 0, F = 0, L = 0, S = 0, N = 0, s = 0, Rmax = 0, Vs = 0, V = 0, Tdual = 0, Tsingle = 0;
  float scale = 1;
  cudaStream_t stream = nullptr;
  DeviceAllocations mem{"CUDA GPT (generic)"};  // every device buffer; mem.bytes() is the VRAM reported
  size_t weights_bytes = 0;
  std::string dev_name;
  int smem_optin = 0, nsm = 132;
  size_t select_smem_topp = 0;

  unsigned char* arena = nullptr;
  std::vector<BlockPtr> xw, cw, sw;  // dual x side, dual c side, single blocks
  std::vector<int> c_has_q;          // per dual block: 0 for the cond_pre_only block (c_k, c_v)
  const bf16* lm = nullptr;
  const float* wte = nullptr;

  float *kc_dual = nullptr, *vc_dual = nullptr, *kc_single = nullptr, *vc_single = nullptr;
  float2* rope = nullptr;
  float *x = nullptr, *c = nullptr, *qkv = nullptr, *att = nullptr, *gu = nullptr, *logits = nullptr,
        *guided = nullptr;
  int *tokens = nullptr, *argmax = nullptr, *h_tokens = nullptr, *h_tokens_dev = nullptr;
  GenControl* ctl = nullptr;
  GenControl h_ctl = {};  // host copy: the source of the async control upload outlives the call
  GenState* st = nullptr;

  int R = 0, P = 0;
  bool cfg_on = false, prefilled = false;
  int tf_step = -1;
  std::map<std::tuple<int, bool, bool, bool, int>, cudaGraphExec_t> graphs;

  ~Impl() {
    for (auto& kv : graphs) cudaGraphExecDestroy(kv.second);
    if (h_tokens) cudaFreeHost(h_tokens);
    if (stream) cudaStreamDestroy(stream);
  }

  template <typename T>
  T* dalloc(size_t count) {
    return mem.alloc<T>(count);
  }
  float* cache_of(float* base, int layer, int T) const { return base + (size_t)layer * Rmax * T * D; }

  // ---- weights: one host image of the arena, one copy --------------------------------------------------------------
  void load(const GptWeightSource& ws) {
    std::vector<unsigned char> img;
    auto reserve = [&](size_t bytes) {
      const size_t off = (img.size() + 255) & ~size_t(255);
      img.resize(off + bytes);
      return off;
    };
    auto get = [&](const std::string& name, std::vector<int64_t> shape) {
      std::vector<float> t = ws.get(name, shape);
      size_t n = 1;
      for (auto d : shape) n *= (size_t)d;
      if (t.size() != n)
        throw cubeforge::Error("CUDA GPT (generic): tensor '" + name + "' has " + std::to_string(t.size()) +
                               " values, expected " + std::to_string(n));
      return t;
    };
    // Linear weights [rows][K] stacked in the order given (bf16); biases likewise (zeros where a part has none).
    auto put_bf16 = [&](size_t off, const std::vector<float>& t, size_t first) {
      uint16_t* d = reinterpret_cast<uint16_t*>(img.data() + off) + first;
      for (size_t i = 0; i < t.size(); ++i) d[i] = to_bf16_rne(t[i]);
    };
    auto put_f32 = [&](size_t off, const std::vector<float>& t) { std::memcpy(img.data() + off, t.data(), t.size() * 4); };
    const int64_t Dl = D, Fl = F;
    const bool bias = cfg.bias;
    // attn: prefix of c_qk / c_k, q_norm / k_norm, c_v; proj: prefix of c_proj; mlp: prefix of the MLP (proj and
    // mlp empty for the cond side of the cond_pre_only block)
    auto load_side = [&](const std::string& attn, const std::string& proj, const std::string& mlp, bool has_q,
                         bool kv_bias) {
      BlockW w;
      const int rows = has_q ? 3 * D : 2 * D;
      w.qkv = reserve((size_t)rows * D * 2);
      w.qkv_b = reserve((size_t)rows * 2);
      std::vector<float> zb((size_t)rows, 0.f);
      if (has_q) {
        put_bf16(w.qkv, get(attn + "c_qk.weight", {2 * Dl, Dl}), 0);
        w.qn = reserve((size_t)hd * 4);
        put_f32(w.qn, get(attn + "q_norm.weight", {hd}));
      } else {
        put_bf16(w.qkv, get(attn + "c_k.weight", {Dl, Dl}), 0);
        if (kv_bias) {
          auto b = get(attn + "c_k.bias", {Dl});
          std::copy(b.begin(), b.end(), zb.begin());
        }
      }
      const size_t v_first = (size_t)(rows - D) * D;
      put_bf16(w.qkv, get(attn + "c_v.weight", {Dl, Dl}), v_first);
      if (kv_bias) {
        auto b = get(attn + "c_v.bias", {Dl});
        std::copy(b.begin(), b.end(), zb.begin() + (rows - D));
      }
      put_bf16(w.qkv_b, zb, 0);
      w.kn = reserve((size_t)hd * 4);
      put_f32(w.kn, get(attn + "k_norm.weight", {hd}));
      if (!proj.empty()) {
        w.o = reserve((size_t)D * D * 2);
        put_bf16(w.o, get(proj + "c_proj.weight", {Dl, Dl}), 0);
        w.gu = reserve((size_t)2 * F * D * 2);  // gate rows then up rows: one GEMM, SwiGLU in the next one's input
        put_bf16(w.gu, get(mlp + "gate_proj.weight", {Fl, Dl}), 0);
        put_bf16(w.gu, get(mlp + "up_proj.weight", {Fl, Dl}), (size_t)F * D);
        w.dn = reserve((size_t)D * F * 2);
        put_bf16(w.dn, get(mlp + "down_proj.weight", {Dl, Fl}), 0);
        if (bias) {
          w.o_b = reserve((size_t)D * 2);
          put_bf16(w.o_b, get(proj + "c_proj.bias", {Dl}), 0);
          w.gu_b = reserve((size_t)2 * F * 2);
          put_bf16(w.gu_b, get(mlp + "gate_proj.bias", {Fl}), 0);
          put_bf16(w.gu_b, get(mlp + "up_proj.bias", {Fl}), (size_t)F);
          w.dn_b = reserve((size_t)D * 2);
          put_bf16(w.dn_b, get(mlp + "down_proj.bias", {Dl}), 0);
        }
      }
      return w;
    };
    std::vector<BlockW> xs, cs, ss;
    for (int l = 0; l < L; ++l) {
      const std::string p = dual_name(l);
      const bool last = l == L - 1;
      xs.push_back(load_side(p + "attn.pre_x.", p + "post_1.", p + "post_1.mlp.", true, bias));
      cs.push_back(load_side(p + "attn.pre_c.", last ? "" : p + "post_2.", last ? "" : p + "post_2.mlp.", !last, bias));
      c_has_q.push_back(last ? 0 : 1);
    }
    for (int l = 0; l < S; ++l) {
      const std::string p = single_name(l);
      ss.push_back(load_side(p + "attn.", p + "attn.", p + "mlp.", true, bias));
    }
    const size_t lm_off = reserve((size_t)Vs * D * 2);
    {
      auto t = get("lm_head.weight", {(int64_t)V, Dl});
      t.resize((size_t)Vs * D);  // BOS / EOS / PAD can never be sampled: only the shape-code rows are kept
      put_bf16(lm_off, t, 0);
    }
    const size_t wte_off = reserve((size_t)V * D * 4);
    put_f32(wte_off, get("transformer.wte.weight", {(int64_t)V, Dl}));

    arena = dalloc<unsigned char>(img.size());
    weights_bytes = img.size();
    CF_CUDA(cudaMemcpy(arena, img.data(), img.size(), cudaMemcpyHostToDevice));
    auto ptrs = [&](const BlockW& w) {
      BlockPtr b;
      b.qkv = reinterpret_cast<const bf16*>(arena + w.qkv);
      b.qkv_b = reinterpret_cast<const bf16*>(arena + w.qkv_b);  // zeros for q / k (and v without bias)
      b.qn = w.qn ? reinterpret_cast<const float*>(arena + w.qn) : nullptr;
      b.kn = reinterpret_cast<const float*>(arena + w.kn);
      if (w.o) {
        b.o = reinterpret_cast<const bf16*>(arena + w.o);
        b.gu = reinterpret_cast<const bf16*>(arena + w.gu);
        b.dn = reinterpret_cast<const bf16*>(arena + w.dn);
      }
      if (w.o_b) {
        b.o_b = reinterpret_cast<const bf16*>(arena + w.o_b);
        b.gu_b = reinterpret_cast<const bf16*>(arena + w.gu_b);
        b.dn_b = reinterpret_cast<const bf16*>(arena + w.dn_b);
      }
      return b;
    };
    for (auto& w : xs) xw.push_back(ptrs(w));
    for (auto& w : cs) cw.push_back(ptrs(w));
    for (auto& w : ss) sw.push_back(ptrs(w));
    lm = reinterpret_cast<const bf16*>(arena + lm_off);
    wte = reinterpret_cast<const float*>(arena + wte_off);
  }

  void alloc_buffers() {
    kc_dual = dalloc<float>((size_t)L * Rmax * Tdual * D);
    vc_dual = dalloc<float>((size_t)L * Rmax * Tdual * D);
    kc_single = dalloc<float>((size_t)std::max(S, 1) * Rmax * Tsingle * D);
    vc_single = dalloc<float>((size_t)std::max(S, 1) * Rmax * Tsingle * D);
    CF_CUDA(cudaMemset(kc_dual, 0, (size_t)L * Rmax * Tdual * D * 4));
    CF_CUDA(cudaMemset(vc_dual, 0, (size_t)L * Rmax * Tdual * D * 4));
    CF_CUDA(cudaMemset(kc_single, 0, (size_t)std::max(S, 1) * Rmax * Tsingle * D * 4));
    CF_CUDA(cudaMemset(vc_single, 0, (size_t)std::max(S, 1) * Rmax * Tsingle * D * 4));
    rope = dalloc<float2>((size_t)N * (hd / 2));
    {  // same formula as the CPU path: inv_freq in fp32, angle = pos * inv_freq in fp32, cos / sin in fp32
      std::vector<float2> t((size_t)N * (hd / 2));
      for (int j = 0; j < hd / 2; ++j) {
        const float inv = 1.0f / std::pow((float)cfg.rope_theta, (float)(2 * j) / (float)hd);
        for (int p = 0; p < N; ++p) {
          const float ang = (float)p * inv;
          t[(size_t)p * (hd / 2) + j] = make_float2(std::cos(ang), std::sin(ang));
        }
      }
      CF_CUDA(cudaMemcpy(rope, t.data(), t.size() * sizeof(float2), cudaMemcpyHostToDevice));
    }
    const size_t M = (size_t)Rmax * std::max(s, 1);  // largest token count of a pass (cond prefill)
    x = dalloc<float>((size_t)Rmax * D);
    c = dalloc<float>(M * D);
    qkv = dalloc<float>(M * 3 * D);
    att = dalloc<float>(M * D);
    gu = dalloc<float>(M * 2 * F);
    logits = dalloc<float>((size_t)Rmax * Vs);
    guided = dalloc<float>((size_t)kMaxP * Vs);
    tokens = dalloc<int>((size_t)kMaxP * N);
    argmax = dalloc<int>(kMaxP);
    ctl = dalloc<GenControl>(1);
    st = dalloc<GenState>(1);
    CF_CUDA(cudaMemset(st, 0, sizeof(GenState)));
    CF_CUDA(cudaMemset(logits, 0, (size_t)Rmax * Vs * 4));
    CF_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&h_tokens), (size_t)kMaxP * N * sizeof(int), cudaHostAllocMapped));
    CF_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&h_tokens_dev), h_tokens, 0));
    int Vp = 1;
    while (Vp < Vs) Vp <<= 1;
    select_smem_topp = (((size_t)Vp * 8 + 15) & ~size_t(15)) + (kSelectThreads + 1) * sizeof(double) + 2 * sizeof(int);
    CF_CUDA(cudaFuncSetAttribute(select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)select_smem_topp));
    gemv_smem_max = std::min({gemv_allow_smem(gemv_kernel<LIN_PLAIN>), gemv_allow_smem(gemv_kernel<LIN_LN>),
                              gemv_allow_smem(gemv_kernel<LIN_SWIGLU>)});
    const size_t attn_smem = (size_t)(5 * hd + std::max(Tdual, Tsingle)) * 4;
    if (attn_smem > 48 * 1024)
      CF_CUDA(cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)attn_smem));
  }

  // ---- launches ----------------------------------------------------------------------------------------------------
  // Lets kernel k take all the dynamic shared memory the device allows next to its static shared memory; returns
  // that many bytes.
  size_t gemv_allow_smem(void (*k)(LinearArgs)) {
    cudaFuncAttributes fa;
    CF_CUDA(cudaFuncGetAttributes(&fa, k));
    const int dyn = smem_optin - (int)fa.sharedSizeBytes;
    CF_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
    return (size_t)dyn;
  }
  size_t gemv_smem_max = 0;
  // Few rows (decode) whose inputs fit in shared memory: the one-warp-per-column GEMV; else the tiled GEMM.
  // CUBEFORGE_GENERIC_TILED=1 keeps the tiled GEMM everywhere (comparisons).
  bool tiled_only = false;
  template <int IN>
  void linear(const float* A, int lda, int M, int K, const bf16* W, const bf16* bias, int Nout, float* C, int ldc,
              bool accumulate) {
    LinearArgs a{A, lda, M, K, Nout, W, bias, C, ldc, accumulate ? 1 : 0, cfg.eps};
    const size_t smem = (size_t)M * K * 4;
    if (!tiled_only && M <= kMaxR && smem <= gemv_smem_max) {
      const int cols = GTHREADS / 32;
      const dim3 grid((unsigned)std::min<long>((Nout + cols - 1) / cols, 4L * nsm));
      gemv_kernel<IN><<<grid, GTHREADS, smem, stream>>>(a);
    } else {
      const dim3 grid((Nout + LBN - 1) / LBN, (M + LBM - 1) / LBM);
      linear_kernel<IN><<<grid, LTHREADS, 0, stream>>>(a);
    }
    CF_CUDA(cudaGetLastError());
  }
  void qk_prep(float* buf, int ld, int M, int tpr, bool has_q, const BlockPtr& w, float* kc, float* vc, int T,
               int slot_base, bool decode) {
    QkArgs a{buf, ld, has_q ? 1 : 0, D, hd, w.qn, w.kn, kc, vc, T, tpr, slot_base, decode ? 1 : 0, decode ? 1 : 0,
             rope, st};
    qk_prep_kernel<<<dim3(M, H), 32, 0, stream>>>(a);
    CF_CUDA(cudaGetLastError());
  }
  void attention(const float* q, int ldq, int M, int tpr, const float* kc, const float* vc, int T, int vc0, int vp,
                 int vt, float* out) {
    AttnArgs a{q, ldq, kc, vc, T, D, hd, scale, tpr, vc0, vp, vt, st, out, D};
    attention_kernel<<<dim3(H, M), ATHREADS, (size_t)(5 * hd + T) * 4, stream>>>(a);
    CF_CUDA(cudaGetLastError());
  }
  // post_1 / post_2 / single-block tail on `rows` rows of xs: xs += o(att); xs += down(SwiGLU(gate|up(LN(xs))))
  void post(float* xs, int rows, const BlockPtr& w) {
    linear<LIN_PLAIN>(att, D, rows, D, w.o, w.o_b, D, xs, D, true);
    linear<LIN_LN>(xs, D, rows, D, w.gu, w.gu_b, 2 * F, gu, 2 * F, false);
    linear<LIN_SWIGLU>(gu, 2 * F, rows, F, w.dn, w.dn_b, D, xs, D, true);
  }

  // Cond stream of every dual block (spec §4.1-4.2): cache slots 0..s-1, cond causal among itself, position 0.
  void run_cond_stream() {
    const int M = R * s;
    for (int l = 0; l < L; ++l) {
      const BlockPtr& w = cw[l];
      float* kc = cache_of(kc_dual, l, Tdual);
      float* vc = cache_of(vc_dual, l, Tdual);
      if (c_has_q[l]) {
        linear<LIN_LN>(c, D, M, D, w.qkv, w.qkv_b, 3 * D, qkv, 3 * D, false);
        qk_prep(qkv, 3 * D, M, s, true, w, kc, vc, Tdual, 0, false);
        attention(qkv, 3 * D, M, s, kc, vc, Tdual, 1, 0, 1, att);
        post(c, M, w);
      } else {  // cond_pre_only: keys and values only
        linear<LIN_LN>(c, D, M, D, w.qkv, w.qkv_b, 2 * D, qkv, 2 * D, false);
        qk_prep(qkv, 2 * D, M, s, false, w, kc, vc, Tdual, 0, false);
      }
    }
  }

  // One decode step at the device position: every dual block's shape side, the single blocks, ln_f + lm_head,
  // token choice (advances the position).
  void enqueue_step(bool causal, bool topp) {
    auto block = [&](const BlockPtr& w, float* kc, float* vc, int T, int slot_base, int vc0, int vp) {
      linear<LIN_LN>(x, D, R, D, w.qkv, w.qkv_b, 3 * D, qkv, 3 * D, false);
      qk_prep(qkv, 3 * D, R, 1, true, w, kc, vc, T, slot_base, true);
      attention(qkv, 3 * D, R, 1, kc, vc, T, vc0, vp, 0, att);
      post(x, R, w);
    };
    for (int l = 0; l < L; ++l)
      block(xw[l], cache_of(kc_dual, l, Tdual), cache_of(vc_dual, l, Tdual), Tdual, s, s + 1, 1);
    for (int l = 0; l < S; ++l)
      block(sw[l], cache_of(kc_single, l, Tsingle), cache_of(vc_single, l, Tsingle), Tsingle, 0, 1, causal ? 1 : 0);
    linear<LIN_LN>(x, D, R, D, lm, nullptr, Vs, logits, Vs, false);
    SelectArgs a{ctl, st, logits, guided, wte, D, x, tokens, h_tokens_dev, argmax};
    select_kernel<<<1, kSelectThreads, topp ? select_smem_topp : 0, stream>>>(a);
    CF_CUDA(cudaGetLastError());
  }
  void init_rows() {
    init_rows_kernel<<<std::max(1, std::min(64, (R * D + 255) / 256)), 256, 0, stream>>>(wte, cfg.bos_id(), R, D, x, st);
    CF_CUDA(cudaGetLastError());
  }

  cudaGraphExec_t graph(bool causal, bool topp, int steps, double* capture_ms) {
    const auto key = std::make_tuple(R, cfg_on, causal, topp, steps);
    auto it = graphs.find(key);
    if (it != graphs.end()) return it->second;
    const double t0 = now_ms();
    cudaGraphExec_t exec = detail::capture_graph(stream, [&]() {
      for (int i = 0; i < steps; ++i) enqueue_step(causal, topp);
    });
    graphs[key] = exec;
    if (capture_ms) *capture_ms += now_ms() - t0;
    return exec;
  }
  void run_steps(bool causal, bool topp, int steps, bool use_graph, double* capture_ms) {
    if (use_graph) {
      CF_CUDA(cudaGraphLaunch(graph(causal, topp, steps, capture_ms), stream));
    } else {
      for (int i = 0; i < steps; ++i) enqueue_step(causal, topp);
    }
  }
  void upload_control(double guidance, bool topp, float top_p, uint64_t seed, const std::vector<int32_t>* forced) {
    GenControl& cc = h_ctl;
    cc = GenControl{};
    cc.P = P;
    cc.cfg = cfg_on ? 1 : 0;
    cc.N = N;
    cc.vocab = Vs;
    cc.topp = topp ? 1 : 0;
    cc.guidance = cfg_on ? guidance : 0.0;
    cc.top_p = top_p;
    cc.seed = seed;
    if (forced) {
      cc.forced = 1;
      for (int p = 0; p < P; ++p) cc.forced_tok[p] = (*forced)[p];
    }
    CF_CUDA(cudaMemcpyAsync(ctl, &cc, sizeof(GenControl), cudaMemcpyHostToDevice, stream));
    CF_CUDA(cudaStreamSynchronize(stream));  // the pageable source is read before the host changes it again
  }
};

// ---- public -----------------------------------------------------------------------------------------------------------
GenericGptEngine::GenericGptEngine() : impl_(std::make_unique<Impl>()) {}
GenericGptEngine::~GenericGptEngine() = default;

std::string GenericGptEngine::unsupported(const GptConfig& cfg, int num_tokens, int cond_len, int max_batch_rows) {
  if (cfg.n_embd < 2 || cfg.n_head < 1 || cfg.n_embd % cfg.n_head != 0)
    return "n_embd " + std::to_string(cfg.n_embd) + " is not a multiple of n_head " + std::to_string(cfg.n_head);
  const int hd = cfg.n_embd / cfg.n_head;
  if (hd % 2 != 0) return "head size " + std::to_string(hd) + " is odd (RoPE rotates pairs)";
  if (hd > 1024) return "head size " + std::to_string(hd) + " > 1024";
  if (cfg.n_embd > 16384) return "n_embd " + std::to_string(cfg.n_embd) + " > 16384";
  if (cfg.n_layer < 1) return "n_layer must be >= 1";
  if (cfg.n_single_layer < 0) return "n_single_layer must be >= 0";
  if (cfg.shape_model_vocab_size < 1 || cfg.shape_model_vocab_size > 16384)
    return "shape_model_vocab_size " + std::to_string(cfg.shape_model_vocab_size) + " outside [1, 16384]";
  if (num_tokens < 1 || num_tokens > 8192) return "num_tokens " + std::to_string(num_tokens) + " outside [1, 8192]";
  if (cond_len < 1 || cond_len > 1024) return "cond_len " + std::to_string(cond_len) + " outside [1, 1024]";
  if (max_batch_rows < 1 || max_batch_rows > kMaxR) return "max_batch_rows must be in [1, 16]";
  const size_t attn_smem = (size_t)(5 * hd + cond_len + num_tokens + 1) * 4;
  if (attn_smem > 200 * 1024) return "attention scores do not fit in shared memory";
  return "";
}

std::unique_ptr<GenericGptEngine> GenericGptEngine::create(const GptConfig& cfg, int num_tokens, int cond_len,
                                                           const GptWeightSource& weights, int max_batch_rows,
                                                           const EngineOptions& opts) {
  const std::string why = unsupported(cfg, num_tokens, cond_len, max_batch_rows);
  if (!why.empty()) throw cubeforge::Error("CUDA GPT (generic kernels): unsupported configuration: " + why);
  if (!weights.get) throw cubeforge::Error("CUDA GPT (generic kernels): no weight source");
  std::unique_ptr<GenericGptEngine> e(new GenericGptEngine());
  Impl& m = *e->impl_;
  m.cfg = cfg;
  m.opts = opts;
  m.D = cfg.n_embd;
  m.H = cfg.n_head;
  m.hd = cfg.head_dim();
  m.F = cfg.mlp_hidden();
  m.L = cfg.n_layer;
  m.S = cfg.n_single_layer;
  m.N = num_tokens;
  m.s = cond_len;
  m.Rmax = max_batch_rows;
  m.Vs = cfg.shape_model_vocab_size;
  m.V = cfg.vocab();
  m.Tdual = cond_len + num_tokens + 1;
  m.Tsingle = num_tokens + 1;
  m.scale = 1.0f / std::sqrt((float)m.hd);
  CF_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop;
  CF_CUDA(cudaGetDeviceProperties(&prop, 0));
  m.dev_name = prop.name;
  m.smem_optin = (int)prop.sharedMemPerBlockOptin;
  m.nsm = prop.multiProcessorCount;
  const char* tiled = std::getenv("CUBEFORGE_GENERIC_TILED");
  m.tiled_only = tiled && std::string(tiled) == "1";
  int Vp = 1;
  while (Vp < m.Vs) Vp <<= 1;
  if ((size_t)Vp * 8 + (kSelectThreads + 1) * 8 + 32 > (size_t)m.smem_optin)
    throw cubeforge::Error("CUDA GPT (generic kernels): top-p needs more shared memory than this GPU allows");
  CF_CUDA(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  const double t0 = now_ms();
  m.load(weights);
  m.alloc_buffers();
  CF_CUDA(cudaDeviceSynchronize());
  if (opts.verbose)
    std::fprintf(stderr,
                 "cubeforge cuda: %s: generic kernels (n_embd %d, %d heads of %d, %d dual + %d single blocks, "
                 "vocab %d): weights %.1f MiB (bf16, norms and wte fp32), total VRAM %.1f MiB; loaded in %.2f s\n",
                 m.dev_name.c_str(), m.D, m.H, m.hd, m.L, m.S, m.Vs, m.weights_bytes / 1048576.0,
                 m.mem.bytes() / 1048576.0, (now_ms() - t0) / 1000.0);
  return e;
}

double GenericGptEngine::prefill(const float* cond, int rows, bool cfg) {
  Impl& m = *impl_;
  const int P = detail::prefill_prompts(rows, cfg, m.Rmax, kMaxP);
  m.R = rows;
  m.P = P;
  m.cfg_on = cfg;
  m.prefilled = false;
  CF_CUDA(cudaMemcpyAsync(m.c, cond, (size_t)rows * m.s * m.D * 4, cudaMemcpyHostToDevice, m.stream));
  const float ms = detail::timed_on_stream(m.stream, [&] { m.run_cond_stream(); });
  m.prefilled = true;
  m.tf_step = 0;
  return ms;
}

std::vector<int32_t> GenericGptEngine::generate(const GenerateOptions& o, GenerateStats* stats) {
  Impl& m = *impl_;
  if (!m.prefilled) throw cubeforge::Error("CUDA GPT generate: call prefill() first");
  const double t_start = now_ms();
  const bool topp = o.top_p.has_value();
  const bool causal = o.attention == SingleBlockAttention::Causal;
  const int K = std::max(1, o.steps_per_graph);
  GenerateStats gs;
  gs.steps_per_chunk = K;
  m.tf_step = -1;  // teacher forcing needs a new prefill after this
  std::fill(m.h_tokens, m.h_tokens + (size_t)kMaxP * m.N, -1);
  m.upload_control(o.guidance, topp, topp ? *o.top_p : 0.9f, o.seed, nullptr);
  if (o.use_graph) {
    m.graph(causal, topp, 1, &gs.capture_ms);
    if (m.N > K) m.graph(causal, topp, K, &gs.capture_ms);
  }
  const bool complete = detail::stream_tokens(m.stream, m.N, m.P, m.h_tokens, o, t_start, K, [&](int first, int count) {
    if (first == 0) m.init_rows();  // x = BOS in every row, position 0
    m.run_steps(causal, topp, count, o.use_graph, &gs.capture_ms);
  }, &gs);
  gs.wall_ms = now_ms() - t_start;
  if (stats) *stats = gs;
  if (!complete) throw cubeforge::Cancelled();
  std::vector<int32_t> out((size_t)m.P * m.N);
  for (size_t i = 0; i < out.size(); ++i) out[i] = m.h_tokens[i];
  return out;
}

std::vector<float> GenericGptEngine::step_logits(const std::vector<int32_t>& feed, float guidance,
                                                 SingleBlockAttention mode, bool use_graph,
                                                 std::vector<int32_t>* argmax) {
  Impl& m = *impl_;
  detail::check_teacher_forcing(m.prefilled, m.tf_step, m.N, feed.size(), m.P);
  for (int32_t t : feed)
    if (t < 0 || t >= m.V) throw cubeforge::Error("CUDA GPT step_logits: token id out of range");
  const bool causal = mode == SingleBlockAttention::Causal;
  m.upload_control(guidance, false, 0.9f, 0, &feed);
  if (m.tf_step == 0) m.init_rows();
  m.run_steps(causal, false, 1, use_graph, nullptr);
  std::vector<float> out((size_t)m.R * m.Vs);
  CF_CUDA(cudaMemcpyAsync(out.data(), m.logits, out.size() * 4, cudaMemcpyDeviceToHost, m.stream));
  if (argmax) {
    argmax->assign(m.P, 0);
    CF_CUDA(cudaMemcpyAsync(argmax->data(), m.argmax, m.P * sizeof(int), cudaMemcpyDeviceToHost, m.stream));
  }
  CF_CUDA(cudaStreamSynchronize(m.stream));
  ++m.tf_step;
  return out;
}

size_t GenericGptEngine::vram_bytes() const { return impl_->mem.bytes(); }
size_t GenericGptEngine::weight_bytes() const { return impl_->weights_bytes; }
int GenericGptEngine::rows() const { return impl_->R; }
int GenericGptEngine::num_tokens() const { return impl_->N; }
int GenericGptEngine::cond_len() const { return impl_->s; }
std::string GenericGptEngine::device_name() const { return impl_->dev_name; }

double GenericGptEngine::decode_bytes_per_step(int rows, SingleBlockAttention mode) const {
  const Impl& m = *impl_;
  const double D = m.D, F = m.F;
  const double block = (3 * D * D + D * D + 2 * F * D + D * F) * 2 + (3 * D + D + 2 * F + D) * 2 + 2 * m.hd * 4;
  const double w = (m.L + m.S) * block + (double)m.Vs * D * 2 + 2 * D * 4;  // + two wte rows
  double ctx = 0;  // mean valid prefix of the dual caches over steps 0..N-1
  for (int i = 0; i < m.N; ++i) ctx += m.s + i + 1;
  ctx /= m.N;
  const double single_ctx = mode == SingleBlockAttention::Causal ? (m.N + 1) / 2.0 : 1.0;
  const double kv = (double)rows * D * 4 * 2 * (m.L * ctx + m.S * single_ctx);
  return w + kv;
}

}  // namespace cubeforge::cuda
