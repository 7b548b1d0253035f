// CUDA GPT engine: bf16 weight arena, cond-stream prefill (cuBLAS; repeated prompts computed once), fused decode step
// (gpt_kernels.cuh) captured as CUDA graphs of several steps, tokens streamed through mapped pinned memory + events.
// See docs/cuda-gpt.md. This file: the public API (cuda_gpt.h: device checks, create, prefill, generate, step_logits).
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cubeforge/cuda_gpt.h"
#include "cublas_check.h"
#include "gpt_card_rules.h"
#include "gpt_generic.h"
#include "gpt_gemv_launch.cuh"
#include "gpt_kernels.cuh"
#include "prefill_rows.h"
#include "token_stream.h"
// The engine's state (CudaGptEngine::Impl) and its methods by concern. Included, not compiled apart: nvcc 13 gives
// the host stubs of __global__ templates internal linkage (-static-global-template-stub, default true), so each
// translation unit would launch its own copy of a kernel, and a cudaFuncSetAttribute in one file (the shared-memory
// limits set by alloc_buffers and create) would not reach the launches of another; the non-template kernels of
// gpt_prefill_kernels.cuh, gpt_mlp.cuh, gpt_lmhead.cuh and gpt_topp.cuh can also be defined in only one of them.
#include "gpt_engine_impl.cuh"
#include "gpt_engine_upload.cuh"
#include "gpt_engine_prefill.cuh"
#include "gpt_engine_step.cuh"
#include "gpt_engine_diag.cuh"

namespace cubeforge::cuda {
using namespace detail;

// ---- public API ---------------------------------------------------------------------------------------------------
bool cuda_available(std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(std::string("no usable CUDA driver/device: ") + cudaGetErrorString(e));
  }
  if (n == 0) return fail("no CUDA device found");
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  if (drv < rt)
    return fail("the NVIDIA driver supports CUDA " + std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10) +
                " but this build needs " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10) +
                ": update the driver");
  cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess) return fail(std::string("cannot query the GPU: ") + cudaGetErrorString(e));
  if (!(prop.major == 9 && prop.minor == 0))
    return fail(std::string("the CUDA GPT kernels are built for compute capability 9.0 (H100/H200, sm_90a); found ") +
                prop.name + " (" + std::to_string(prop.major) + "." + std::to_string(prop.minor) + ")");
  if (why) *why = std::string("ok: ") + prop.name;
  return true;
}

double measure_copy_bandwidth(size_t bytes, int reps) { return detail::copy_bandwidth_bytes_per_s(bytes, reps); }

CudaGptEngine::CudaGptEngine() : impl_(std::make_unique<Impl>()) {}
CudaGptEngine::~CudaGptEngine() = default;

std::unique_ptr<CudaGptEngine> CudaGptEngine::create(const GptConfig& cfg, int num_tokens, int cond_len,
                                                     const GptWeightSource& weights, int max_batch_rows,
                                                     const EngineOptions& opts) {
  if ((unsigned)opts.variant & ~kVarKnown)
    throw cubeforge::Error("CUDA GPT: EngineOptions::variant " + std::to_string(opts.variant) +
                           " has bits other than 3, 4, 5 (layout, numerics), 18, 19, 21-24 (diagnostics); the other "
                           "experiments were removed in session 11 (docs/cuda-gpt.md)");
#ifndef CF_DIAG_HASH
  if (opts.variant & kVarHash)
    throw cubeforge::Error("CUDA GPT: variant bit 24 (output hashes) needs a binary built with -DCF_DIAG_HASH "
                           "(EXTRA_NVFLAGS=-DCF_DIAG_HASH tools/device/build_cuda_gpt.sh)");
#endif
  std::string why;
  if (!cuda_available(&why)) throw cubeforge::Error("CUDA GPT unavailable: " + why);
  // Configurations the fast kernels are not built for (the small models: golden cases, the default model) run on
  // the generic-width kernels (gpt_generic.h); CUBEFORGE_CUDA_GPT=generic forces them at any width.
  const char* force = std::getenv("CUBEFORGE_CUDA_GPT");
  const bool fast_fits = cfg.n_embd == D && cfg.n_head == H && cfg.mlp_hidden() == F && cfg.n_single_layer == 1 &&
                         !cfg.use_pooled_text_embed && num_tokens >= 2 && num_tokens <= 4096 && cond_len >= 1 &&
                         cond_len <= 128 && cfg.shape_model_vocab_size % 16 == 0 && cfg.shape_model_vocab_size <= 16384;
  if (!fast_fits || (force && std::string(force) == "generic")) {
    const std::string no = GenericGptEngine::unsupported(cfg, num_tokens, cond_len, max_batch_rows);
    if (!no.empty())
      throw cubeforge::Error("CUDA GPT: this model (n_embd " + std::to_string(cfg.n_embd) + ", n_head " +
                             std::to_string(cfg.n_head) + ") fits neither the fast kernels (n_embd 1536, 12 heads) " +
                             "nor the generic-width kernels: " + no);
    std::unique_ptr<CudaGptEngine> e(new CudaGptEngine());
    e->generic_ = GenericGptEngine::create(cfg, num_tokens, cond_len, weights, max_batch_rows, opts);
    return e;
  }
  if (cfg.n_embd != D || cfg.n_head != H || cfg.mlp_hidden() != F)
    throw cubeforge::Error("CUDA GPT: kernels are specialised for n_embd 1536, 12 heads, MLP 6144; config has n_embd " +
                           std::to_string(cfg.n_embd) + ", n_head " + std::to_string(cfg.n_head));
  if (cfg.n_single_layer != 1) throw cubeforge::Error("CUDA GPT: n_single_layer must be 1");
  if (cfg.n_layer < 1) throw cubeforge::Error("CUDA GPT: n_layer must be >= 1");
  if (cfg.use_pooled_text_embed) throw cubeforge::Error("CUDA GPT: use_pooled_text_embed is not supported");
  if (num_tokens < 2 || num_tokens > 4096) throw cubeforge::Error("CUDA GPT: num_tokens out of range");
  if (cond_len < 1 || cond_len > 128) throw cubeforge::Error("CUDA GPT: cond_len must be in [1, 128]");
  if (max_batch_rows < 1 || max_batch_rows > MAXR) throw cubeforge::Error("CUDA GPT: max_batch_rows must be in [1, 16]");
  if (cfg.shape_model_vocab_size % 16 != 0 || cfg.shape_model_vocab_size > 16384)
    throw cubeforge::Error("CUDA GPT: shape_model_vocab_size must be a multiple of 16, <= 16384");
  if (!weights.get) throw cubeforge::Error("CUDA GPT: no weight source");
  std::unique_ptr<CudaGptEngine> e(new CudaGptEngine());
  Impl& m = *e->impl_;
  m.cfg = cfg;
  m.opts = opts;
  m.N = num_tokens;
  m.s = cond_len;
  m.Rmax = max_batch_rows;
  m.L = cfg.n_layer;
  m.Vs = cfg.shape_model_vocab_size;
  m.V = cfg.vocab();
  CF_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop;
  CF_CUDA(cudaGetDeviceProperties(&prop, 0));
  m.dev_name = prop.name;
  m.nsm = prop.multiProcessorCount;
  m.blocked = (opts.variant & kVarRowMajor) ? 0 : 1;  // blocked weight layout (default; bit 3 = row-major)
  m.split_dec = (opts.variant & kVarBf16Dec) ? 0 : 1;  // bit 4: decode GEMV activations bf16 only (no lo part)
  m.split_pre = (opts.variant & kVarBf16Pre) ? 0 : 1;  // bit 5: prefill GEMM activations bf16 only (no lo part)
  m.smem_optin = prop.sharedMemPerBlockOptin;
  {  // the memory's peak bandwidth: the per-card defaults (gpt_card_rules.h: the MLP ring's depth, early triggers)
    int mem_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0) == cudaSuccess)
      m.peak_bw = peak_memory_bandwidth(mem_khz, bus_bits);
  }
  m.early_trig = early_trigger_bits(m.peak_bw);
  m.diag_no_attn = (opts.variant & kVarNoAttn) != 0;  // diagnostics, timing only: no attention kernels
  m.diag_l2w = (opts.variant & kVarL2Weights) != 0;   // diagnostics, timing only: every GEMV reads the same 2 MB
  m.diag_tl = (opts.variant & kVarTimeline) != 0;
  m.diag_nostats = (opts.variant & kVarNoLnStats) != 0;
  m.diag_poison = (opts.variant & kVarPoison) != 0;
  m.diag_hash = (opts.variant & kVarHash) != 0;
  if (const char* qs = std::getenv("CUBEFORGE_GPT_QKV_SM_ROWS")) m.qkv_sm_rows = std::atoi(qs);
  if (const char* pg = std::getenv("CUBEFORGE_GPT_PREFILL_GRAPH")) m.prefill_graph_on = std::string(pg) != "0";
  if (const char* ps = std::getenv("CUBEFORGE_GPT_PREFILL_SHARE")) m.prefill_share = std::string(ps) != "0";
  if (const char* ps = std::getenv("CUBEFORGE_GPT_PREFIX_SHARE")) m.prefix_share = std::string(ps) != "0";
  if (const char* et = std::getenv("CUBEFORGE_GPT_EARLY_TRIG")) m.early_trig = std::atoi(et) & 3;
  if (const char* ob = std::getenv("CUBEFORGE_GPT_OPROJ_BLOCKS")) m.oproj_blocks = std::max(0, std::atoi(ob));
  if (const char* qb = std::getenv("CUBEFORGE_GPT_QKV_BLOCKS")) m.qkv_blocks = std::max(0, std::atoi(qb));
  if (const char* qb = std::getenv("CUBEFORGE_GPT_QKV_BLOCKS_WIDE")) m.qkv_blocks_wide = std::max(0, std::atoi(qb));
  if (const char* sr = std::getenv("CUBEFORGE_GPT_ATTN_SPREAD_ROWS")) m.attn_spread_rows = std::atoi(sr);
  if (opts.verbose)
    std::fprintf(stderr, "cubeforge cuda: decode GEMVs: one-round qkv (and gate-up / down-proj where the MLP is not "
                         "fused) at <= 8 rows, persistent otherwise; %s weights, activations %s; L2 %d MB%s%s\n",
                 m.blocked ? "blocked" : "row-major", m.split_dec ? "bf16 hi + lo" : "bf16 only",
                 prop.l2CacheSize >> 20, m.diag_no_attn ? "; DIAGNOSTIC: no attention (wrong outputs)" : "",
                 m.diag_l2w ? "; DIAGNOSTIC: weights from one 2 MB L2-resident range (wrong outputs)" : "");
  CF_CUDA(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  if (cublasCreate(&m.blas) != CUBLAS_STATUS_SUCCESS) throw cubeforge::Error("CUDA GPT: cublasCreate failed");
  CF_CUBLAS(cublasSetStream(m.blas, m.stream));
  CF_CUBLAS(cublasSetMathMode(m.blas, CUBLAS_DEFAULT_MATH));
  if (const char* me = std::getenv("CUBEFORGE_GPT_MLP"); !me || std::string(me) != "0") {
    // every block of the fused MLP must be resident at once (its final sum waits for all of them)
    if (prop.major < 9 || !m.blocked || (m.diag_l2w && !kDiagL2wFused) || m.nsm < MLP_NB ||
        (size_t)m.smem_optin < mlp_smem(m.Rmax, 2)) {
      if (opts.verbose)
        std::fprintf(stderr, "cubeforge cuda: fused MLP not available on this GPU/configuration, per-kernel MLP\n");
    } else {
      m.mlp_on = true;
      if (const char* sl = std::getenv("CUBEFORGE_GPT_MLP_SLOTS")) m.mlp_slots_env = std::atoi(sl);
      if (const char* pr = std::getenv("CUBEFORGE_GPT_MLP_PRE")) m.mlp_pre_env = std::atoi(pr);
      if (const char* wd = std::getenv("CUBEFORGE_GPT_MLP_WIDE")) m.mlp_wide = std::string(wd) != "0";
      if (const char* nr = std::getenv("CUBEFORGE_GPT_MLP_NRED")) m.mlp_nred_env = std::atoi(nr);
      int occ = 0;
      CF_CUDA(cudaFuncSetAttribute(mlp_kernel<true, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)mlp_smem(m.Rmax, m.mlp_slots(m.Rmax))));
      CF_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, mlp_kernel<true, true>, MLP_THREADS,
                                                            mlp_smem(m.Rmax, m.mlp_slots(m.Rmax))));
      if (occ < 1) m.mlp_on = false;
      if (opts.verbose)
        std::fprintf(stderr, "cubeforge cuda: fused MLP %s (%d blocks, %d ring slots of %d KB at %d rows)\n",
                     m.mlp_on ? "on" : "off (does not fit)", MLP_NB, m.mlp_slots(std::min(m.Rmax, 2)),
                     MLP_SLOT >> 10, std::min(m.Rmax, 2));
    }
  }
  if (const char* lr = std::getenv("CUBEFORGE_GPT_LM_RING"); !lr || std::string(lr) != "0") {
    if (const char* sl = std::getenv("CUBEFORGE_GPT_LM_SLOTS")) m.lm_slots_env = std::atoi(sl);
    if (const char* pr = std::getenv("CUBEFORGE_GPT_LM_PRE")) m.lm_pre_env = std::atoi(pr);
    const int r8 = std::min(m.Rmax, 8);
    m.lm_ring_on = prop.major >= 9 && m.blocked && (!m.diag_l2w || kDiagL2wFused) && m.Vs % LMR_ROWS == 0 &&
                   (size_t)m.smem_optin >= lm_ring_smem(r8, 2);
    if (m.lm_ring_on)  // the largest launch over 1..8 rows (session 20's first full bench failed at batch 2 on this)
      CF_CUDA(cudaFuncSetAttribute(lm_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)lm_ring_smem_limit(r8, (size_t)m.smem_optin, m.lm_slots_env)));
    if (opts.verbose)
      std::fprintf(stderr, "cubeforge cuda: lm_head %s\n",
                   m.lm_ring_on ? "streamed through a shared-memory ring at <= 8 rows" : "persistent GEMV");
  }
  const double t0 = now_ms();
  m.load(weights);
  m.alloc_buffers();
  CF_CUDA(cudaDeviceSynchronize());  // legacy-stream memsets/copies of alloc_buffers() complete before any kernel
  if (opts.verbose)
    std::fprintf(stderr,
                 "cubeforge cuda: %s: weights %.2f GiB (bf16 arena, wte fp32), KV cache %.2f GiB for %d rows, "
                 "total VRAM %.2f GiB; loaded in %.1f s; memory peak %.0f GB/s: MLP ring %d slots at 2 rows, %d at 8, "
                 "early triggers %d (bit 0 attention, bit 1 o-proj)\n",
                 m.dev_name.c_str(), m.weights_bytes / 1073741824.0, m.kv_bytes / 1073741824.0, m.Rmax,
                 m.mem.bytes() / 1073741824.0, (now_ms() - t0) / 1000.0, m.peak_bw / 1e9, m.mlp_slots(2),
                 m.mlp_slots(8), m.early_trig);
  return e;
}

double CudaGptEngine::prefill(const float* cond, int rows, bool cfg) {
  if (generic_) return generic_->prefill(cond, rows, cfg);
  Impl& m = *impl_;
  const int P = prefill_prompts(rows, cfg, m.Rmax, MAXP);
  m.R = rows;
  m.P = P;
  m.cfg_on = cfg;
  m.prefilled = false;
  const size_t row = (size_t)m.s * D;
  m.Rpre = m.prefill_share ? prefill_rows_to_compute(cond, rows, cfg, row) : rows;
  if (m.Rpre == rows) {
    CF_CUDA(cudaMemcpyAsync(m.pc, cond, rows * row * 4, cudaMemcpyHostToDevice, m.stream));
  } else {  // the first prompt's rows: cond (and uncond, row P of the input)
    CF_CUDA(cudaMemcpyAsync(m.pc, cond, row * 4, cudaMemcpyHostToDevice, m.stream));
    if (cfg) CF_CUDA(cudaMemcpyAsync(m.pc + row, cond + P * row, row * 4, cudaMemcpyHostToDevice, m.stream));
  }
  cudaGraphExec_t g = m.prefill_graph();  // captured (first use of these row counts) before the timed region
  const float ms = timed_on_stream(m.stream, [&] {
    if (g) CF_CUDA(cudaGraphLaunch(g, m.stream));
    else m.run_cond_stream();
  });
  m.prefilled = true;
  m.tf_step = 0;
  return ms;
}

std::vector<int32_t> CudaGptEngine::generate(const GenerateOptions& o, GenerateStats* stats) {
  if (generic_) return generic_->generate(o, stats);
  Impl& m = *impl_;
  if (!m.prefilled) throw cubeforge::Error("CUDA GPT generate: call prefill() first");
  const double t_start = now_ms();
  const bool topp = o.top_p.has_value();
  const bool causal = o.attention == SingleBlockAttention::Causal;
  const int K = std::max(1, o.steps_per_graph);
  GenerateStats st;
  st.steps_per_chunk = K;
  Ctl c = m.make_ctl(o.guidance);
  c.write_guided = topp ? 1 : 0;
  c.top_p = topp ? *o.top_p : 0.9f;
  c.seed = o.seed;
  std::fill(m.h_tokens, m.h_tokens + (size_t)MAXP * m.N, -1);
  if (o.use_graph) {
    m.graph(causal, topp, K, &st.capture_ms);
    m.graph(causal, topp, 1, &st.capture_ms);
  }
  m.tf_step = -1;  // teacher forcing must start from a new prefill
  m.write_ctl(c);
  m.reset_pos();
  if (m.diag_poison) m.poison_state();
  if (m.hlog) CF_CUDA(cudaMemsetAsync(m.hlog, 0, (size_t)m.N * kHashK * kHashSub * sizeof(unsigned), m.stream));

  // Step 0 (BOS) eagerly, then K-step graphs (or eager steps) through the shared streaming loop (token_stream.h).
  auto launch = [&](int first, int count) {
    if (first == 0) {
      m.enqueue_step(StepKind{true, causal, topp});
    } else if (o.use_graph) {
      CF_CUDA(cudaGraphLaunch(m.graph(causal, topp, count, &st.capture_ms), m.stream));
    } else {
      for (int i = 0; i < count; ++i) m.enqueue_step(StepKind{false, causal, topp});
    }
  };
  const bool cancelled = !stream_tokens(m.stream, m.N, m.P, m.h_tokens, o, t_start, K, launch, &st);
  st.wall_ms = now_ms() - t_start;
  if (stats) *stats = st;
  if (cancelled) throw cubeforge::Cancelled();
  std::vector<int32_t> out((size_t)m.P * m.N);
  for (size_t i = 0; i < out.size(); ++i) out[i] = m.h_tokens[i];
  if (m.diag_tl && o.use_graph) m.timeline_report(causal, topp);
  return out;
}

std::vector<float> CudaGptEngine::step_logits(const std::vector<int32_t>& feed, float guidance,
                                              SingleBlockAttention mode, bool use_graph, std::vector<int32_t>* argmax) {
  if (generic_) return generic_->step_logits(feed, guidance, mode, use_graph, argmax);
  Impl& m = *impl_;
  check_teacher_forcing(m.prefilled, m.tf_step, m.N, feed.size(), m.P);
  const bool causal = mode == SingleBlockAttention::Causal;
  Ctl c = m.make_ctl(guidance);
  c.forced = 1;
  c.write_raw = 1;
  for (int p = 0; p < m.P; ++p) c.forced_tok[p] = feed[p];
  m.write_ctl(c);
  if (m.tf_step == 0) {
    m.reset_pos();
    m.enqueue_step(StepKind{true, causal, false});
  } else if (use_graph) {
    CF_CUDA(cudaGraphLaunch(m.graph(causal, false, 1, nullptr), m.stream));
  } else {
    m.enqueue_step(StepKind{false, causal, false});
  }
  std::vector<float> out((size_t)m.R * m.Vs);
  CF_CUDA(cudaMemcpyAsync(out.data(), m.raw, out.size() * 4, cudaMemcpyDeviceToHost, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  if (argmax) {
    argmax->assign(m.P, 0);
    const double gd = m.cfg_on ? (double)guidance * (double)(m.N - m.tf_step) / (double)m.N : 0.0;
    const float g1 = (float)(1.0 + gd), gm = (float)gd;
    for (int p = 0; p < m.P; ++p) {
      float best = -INFINITY;
      int bi = 0;
      for (int v = 0; v < m.Vs; ++v) {
        const float lc = out[(size_t)p * m.Vs + v];
        volatile float a = g1 * lc;
        volatile float b = m.cfg_on ? gm * out[(size_t)(m.P + p) * m.Vs + v] : 0.f;
        const float gv = m.cfg_on ? a - b : lc;
        if (gv > best) {
          best = gv;
          bi = v;
        }
      }
      (*argmax)[p] = bi;
    }
  }
  ++m.tf_step;
  return out;
}

std::vector<unsigned> CudaGptEngine::diag_output_hashes(std::vector<std::string>* kernel_names) const {
  if (generic_ || !impl_->hlog) return {};
  const Impl& m = *impl_;
  std::vector<unsigned> h((size_t)m.N * kHashK * kHashSub);
  CF_CUDA(cudaMemcpyAsync(h.data(), m.hlog, h.size() * sizeof(unsigned), cudaMemcpyDeviceToHost, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  if (kernel_names) {
    kernel_names->assign(kHashK, "");
    for (int k = 0; k < kHashK && k < (int)m.kname.size(); ++k) (*kernel_names)[k] = m.kname[k];
  }
  return h;
}

size_t CudaGptEngine::vram_bytes() const { return generic_ ? generic_->vram_bytes() : impl_->mem.bytes(); }
size_t CudaGptEngine::weight_bytes() const { return generic_ ? generic_->weight_bytes() : impl_->weights_bytes; }
int CudaGptEngine::rows() const { return generic_ ? generic_->rows() : impl_->R; }
int CudaGptEngine::num_tokens() const { return generic_ ? generic_->num_tokens() : impl_->N; }
int CudaGptEngine::cond_len() const { return generic_ ? generic_->cond_len() : impl_->s; }
std::string CudaGptEngine::device_name() const { return generic_ ? generic_->device_name() : impl_->dev_name; }
bool CudaGptEngine::uses_generic_kernels() const { return generic_ != nullptr; }

double CudaGptEngine::decode_bytes_per_step(int rows, SingleBlockAttention mode) const {
  if (generic_) return generic_->decode_bytes_per_step(rows, mode);
  const Impl& m = *impl_;
  const double layer = (3.0 * D * D + D * D + 2.0 * F * D + (double)D * F) * 2 + (D + D + 2 * F + D) * 2 + 2 * HD * 4;
  const double single_mlp = (2.0 * F * D + (double)D * F) * 2 + (2 * F + D) * 2;
  const double single_attn = (3.0 * D * D + D * D) * 2 + 2 * D * 2 + 2 * HD * 4;
  double w = m.L * layer + single_mlp + (double)m.Vs * D * 2;
  if (mode == SingleBlockAttention::Causal) w += single_attn;
  double ctx = 0;  // mean valid prefix over decode steps 1..N-1
  for (int i = 1; i < m.N; ++i) ctx += m.s + i + 1;
  ctx /= (m.N - 1);
  double kv = (double)m.L * rows * H * ctx * HD * 2 * 2;
  if (mode == SingleBlockAttention::Causal) kv += (double)rows * H * (m.N / 2.0 + 1) * HD * 2 * 2;
  return w + kv;
}

}  // namespace cubeforge::cuda
