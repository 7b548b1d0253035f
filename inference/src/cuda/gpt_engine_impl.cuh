// The CUDA GPT engine's state (CudaGptEngine::Impl: options, weight arena, buffers, graphs, per-card settings and
// their small helpers), the file-local types it uses, and its methods' declarations (defined by concern in
// gpt_engine_upload/prefill/step/diag.cuh). Private to cuda_gpt_engine.cu, the engine's one translation unit.
#pragma once
#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cubeforge/cuda_gpt.h"
#include "gpt_card_rules.h"
#include "gpt_gemv_launch.cuh"
#include "gpt_kernels.cuh"

namespace cubeforge::cuda {
using namespace detail;

namespace gpt_engine_detail {

// EngineOptions::variant: the bits that still select something (cuda_gpt.h); create() refuses the others.
constexpr unsigned kVarRowMajor = 8, kVarBf16Dec = 16, kVarBf16Pre = 32;
constexpr unsigned kVarNoAttn = 1u << 18, kVarL2Weights = 1u << 19, kVarTimeline = 1u << 21, kVarNoLnStats = 1u << 22;
constexpr unsigned kVarPoison = 1u << 23, kVarHash = 1u << 24;
// Variant bit 19 (weights from L2, timing only) keeps the fused MLP and the ring lm_head only in a build whose kernels
// fold their weight streams into small windows too (-DCF_DIAG_L2W, session 39); otherwise they give way to GEMVs.
#ifdef CF_DIAG_L2W
constexpr bool kDiagL2wFused = true;
#else
constexpr bool kDiagL2wFused = false;
#endif
constexpr unsigned kVarKnown = kVarRowMajor | kVarBf16Dec | kVarBf16Pre | kVarNoAttn | kVarL2Weights | kVarTimeline |
                               kVarNoLnStats | kVarPoison | kVarHash;

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One stream's weights in the arena: a dual block's x (shape) or c (cond) side, or the single block.
struct StreamW {
  bf16 *qkv = nullptr, *vb = nullptr, *o = nullptr, *ob = nullptr, *gu = nullptr, *gub = nullptr, *dn = nullptr,
       *dnb = nullptr;
  float *qn = nullptr, *kn = nullptr;
};

struct LayerW {
  StreamW x, c;  // cond_pre_only: c.qkv holds k|v (2*D*D), c.vb their biases (2*D), c.kn only
  bool cond_pre_only = false;
};

struct StepKind {
  bool step0 = false;   // BOS step: the single block runs its attention (and saves c_proj(v_BOS))
  bool causal = false;  // single-block decode attends to 0..i (else the constant of slot 0)
  bool topp = false;    // guided logits + top-p kernel (else argmax in the lm_head tail)
};

}  // namespace gpt_engine_detail
using namespace gpt_engine_detail;

struct CudaGptEngine::Impl {
  GptConfig cfg;
  EngineOptions opts;
  int N = 0, s = 0, Rmax = 0, L = 0, Vs = 0, V = 0, Tdual = 0, maxs_dual = 0, maxs_single = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  DeviceAllocations mem{"CUDA GPT"};  // every device buffer; mem.bytes() is the VRAM reported
  size_t weights_bytes = 0, kv_bytes = 0;
  std::string dev_name;

  std::vector<LayerW> layers;
  StreamW single;
  bf16* lm = nullptr;
  float* wte = nullptr;

  bf16 *kc = nullptr, *vc = nullptr, *skc = nullptr, *svc = nullptr;
  float2* rope = nullptr;
  float *x = nullptr, *stats = nullptr, *ks_scratch = nullptr, *lm_val = nullptr, *guided = nullptr,
        *raw = nullptr;
  float *qkv = nullptr, *sconst = nullptr;
  bf16 *att = nullptr, *att_lo = nullptr, *hbuf = nullptr, *hbuf_lo = nullptr;
  unsigned *ks_cnt = nullptr;
  // the decode attention's tagged split partials and per-(row, head) epochs (gpt_attention.cuh)
  unsigned long long* atpart = nullptr;
  unsigned* aep = nullptr;
  int atstride = 0;
  int *lm_idx = nullptr, *tokens = nullptr, *h_tokens = nullptr, *h_tokens_dev = nullptr;
  Ctl* ctl = nullptr;
  Dyn* dyn = nullptr;
  float *pc = nullptr, *pacc = nullptr, *pq = nullptr;
  bf16 *pact = nullptr, *patt = nullptr;
  int lm_blocks = 0;
  int nsm = 132, blocked = 1, smem_optin = 0;
  int split_dec = 1, split_pre = 1;  // activation operands as bf16 hi + lo (decode GEMVs / prefill GEMMs)
  bool diag_no_attn = false, diag_l2w = false;  // timing-only diagnostics (bits 18, 19): wrong outputs
  bool diag_nostats = false;  // timing-only diagnostic (bit 22): the LN prologues skip the row statistics
  // Diagnostic (bit 23, session 21's determinism bug): before each generate, what the decode writes before it reads
  // (the KV slots past the conditioning, the single block's cache, the qkv and attention outputs) is filled with NaN
  // bytes, so a read of a value left by an earlier run turns the logits to NaN instead of going unseen.
  bool diag_poison = false;
  bool diag_hash = false;  // bit 24: output hashes (hlog)
  // Timeline diagnostics (bit 21): stamps of every decode kernel of one step (TlStamp), printed by generate().
  bool diag_tl = false;
  unsigned long long* tl = nullptr;
  static constexpr int kTlMax = 256;
  int kseq = 0;
  std::vector<std::string> kname;
  // Output hashes (bit 24, in a binary built with -DCF_DIAG_HASH): [N][kHashK][kHashSub] words, zeroed before each
  // generate and fetched by diag_output_hashes().
  unsigned* hlog = nullptr;
  bool step0_now = false;   // enqueue_step of step 0 (its kernels do not name the graph's timeline slots)
  bool single_now = false;  // enqueue_step is in the single block (timeline names)
  int kseq_graph = 0;       // kernels of a graph step (timeline)
  // the middle layer's MLP phase stamps (diagnostics, CF_DIAG_PHASES; gpt_mlp.cuh mlp_phase)
  unsigned long long* mlp_ph = nullptr;
  // and the next layer's one-round qkv per block (gpt_gemv.cuh gemv_phase), reported beside them
  unsigned long long* qkv_ph = nullptr;
  int qkv_ph_blocks = 0;  // blocks qkv_ph holds (a qkv grid larger than that is not stamped)
  int ph_kseq = -1, cur_layer = -1;

  // Fused MLP (gpt_mlp.cuh, session 13): LN + gate/up + SwiGLU + down-proj in one launch per block, split along the
  // hidden units; the default where all its 128 blocks fit on the GPU at once (CUBEFORGE_GPT_MLP=0: the gate/up and
  // down-proj GEMVs). Decided before the weights load: the down-proj then takes the hidden-slice layout.
  // CUBEFORGE_GPT_MLP_SLOTS / _PRE (measurement knobs): ring slots / stages requested before the wait.
  bool mlp_on = false;
  float* mlp_part = nullptr;
  unsigned long long* mlp_tagged = nullptr;  // the one-prompt kernel's tagged partials (gpt_mlp.cuh, TAGS)
  unsigned long long* mlp_ctr = nullptr;
  int mlp_nred_env = -1;  // measurement knob CUBEFORGE_GPT_MLP_NRED (mlp_reducers)
  int mlp_slots_env = 0, mlp_pre_env = -1;
  bool mlp_wide = true;  // measurement knob CUBEFORGE_GPT_MLP_WIDE=0: the one-prompt kernel at 3-8 rows too
  // qkv with its third item in shared memory (Gemv1QkvSm) up to this many rows (measurement knob
  // CUBEFORGE_GPT_QKV_SM_ROWS; session 11 measured it at 8 rows +1%, before the fused MLP and the attention refactor)
  int qkv_sm_rows = 2;
  // early_trig: bit 0 = the attention, bit 1 = the o-proj launch their successor at their start (pdl_early_trigger);
  // by card (early_trigger_bits, gpt_card_rules.h: the attention's everywhere, the o-proj's too on the H100),
  // measurement knob CUBEFORGE_GPT_EARLY_TRIG (session 24). CUBEFORGE_GPT_OPROJ_BLOCKS caps the o-proj's grid (0: one block per tile)
  int early_trig = 0, oproj_blocks = 0;
  // The one-round qkv's grid cap (Gemv1::run's max_grid) at <= qkv_sm_rows rows / at more rows (measurement knobs
  // CUBEFORGE_GPT_QKV_BLOCKS / _QKV_BLOCKS_WIDE). Session 25: at 3-8 rows the fewest blocks (192 for 576 items, each
  // with three register items; 264 before) measured batch 4 -1.3% (v0.5) / -0.3% (v0.1); at one prompt 192 blocks
  // were +0.3% / +0.9%, so it keeps two blocks per SM there.
  int qkv_blocks = 0, qkv_blocks_wide = 1;
  // Session 26: the attention's combine spread over several blocks (attn_combine_spread) at <= attn_spread_rows rows
  // (measurement knob CUBEFORGE_GPT_ATTN_SPREAD_ROWS, 0 = never). Measured: one prompt -0.7% / -1.4% (v0.1 / v0.5);
  // 4 rows +0.8% / -0.8% (one run each: not taken); 8 rows +0.8% / +2.4%.
  int attn_spread_rows = 2;
  // The instantiation for r rows: M16 above 8 rows, WIDE above 2 (unless switched off), the one-prompt kernel else.
  using MlpKernel = void (*)(MlpParams);
  static constexpr MlpKernel kMlpKernels[3] = {mlp_kernel<false, false>, mlp_kernel<false, true>,
                                               mlp_kernel<true, true>};
  MlpKernel mlp_kernel_for(int r) const {
    return r > 8 ? kMlpKernels[2] : (r > 2 && mlp_wide) ? kMlpKernels[1] : kMlpKernels[0];
  }
  // lm_head streamed through a shared-memory ring (gpt_lmhead.cuh, session 20) at <= 8 rows where it fits
  // (CUBEFORGE_GPT_LM_RING=0: the persistent GemvLm everywhere; CUBEFORGE_GPT_LM_SLOTS / _LM_PRE: ring slots, default
  // 6, and stages requested before the wait, default all of the ring: measurement knobs).
  bool lm_ring_on = false;
  int lm_slots_env = 0, lm_pre_env = -1;
  int lm_ring_slots(int r) const { return detail::lm_ring_slots(r, (size_t)smem_optin, lm_slots_env); }
  // Ring slots at r rows: 5 by default, fewer where they do not fit. Session 15 (H200): 5 instead of 6 leaves more
  // shared memory beside the MLP blocks for the next kernels' early blocks: batch 4 -1.2% (v0.5) / -0.3% (v0.1), batch
  // 1 equal (-0.1%), in three alternating rounds; 4 slots: batch 4 -0.9%, batch 1 +0.2%; session 23 (H200): 6 slots
  // +0.2% / +0.4% at one prompt. Session 36 (H100, 3.0 TB/s of copy bandwidth against the H200's 4.3): a deeper ring
  // pays there, two rounds each against 5 slots: at one prompt 6 slots -0.4% / -0.3% (v0.1 / v0.5), 7 -0.5% / -0.9%,
  // 8 -0.4% / -1.1%; at batch 4 6 slots -0.3% / -0.2%, 7 and 8 +0.1%. So where the memory's peak bandwidth is under
  // 4 TB/s: 7 slots up to 2 rows, 6 above (mlp_ring_depth, gpt_card_rules.h).
  double peak_bw = 0;  // bytes/s (peak_memory_bandwidth), 0 if the device does not say
  int mlp_slots(int r) const {
    int n = mlp_slots_env > 0 ? std::min(mlp_slots_env, MLP_MAXSLOTS) : mlp_ring_depth(r, peak_bw);
    while (n > 2 && mlp_smem(r, n) > (size_t)smem_optin) --n;
    return n;
  }
  // Ring stages requested before the MLP's griddepcontrol.wait (measurement knob CUBEFORGE_GPT_MLP_PRE): one fewer
  // than the ring holds. Session 23, 5 slots, two alternating rounds (docs/cuda-gpt-notes.md): 4 of 5 against all 5
  // -0.6% / -0.5% at one prompt (v0.1 / v0.5) and -0.6% / -0.7% at batch 4; 3 of 5 -0.7% / -0.4% at one prompt but
  // equal at batch 4; 2 of 5 +1.2% / +1.0% at batch 4. Why is not measured (a guess: the LN prologue's L2 reads,
  // issued right after the wait, queue behind fewer bulk copies).
  int mlp_pre(int nst) const { return mlp_pre_env >= 0 ? std::min(mlp_pre_env, nst) : std::max(nst - 1, 1); }
  // How many of the one-prompt MLP's blocks sum its partials (the last ones to arrive; the others leave at once):
  // 64 measured best at one prompt (session 17: 32 / 64 / 96 / 128, docs/cuda-gpt-notes.md); above 2 rows every
  // block (the WIDE kernel ignores it). At least enough that a reducer's outputs fit its threads (one each).
  int mlp_reducers(int r) const {
    int n = r > 2 ? MLP_NB : mlp_nred_env > 0 ? std::min(mlp_nred_env, MLP_NB) : 64;
    const int per = MLP_THREADS / (8 * r);  // output groups a reducer can hold
    while (n < MLP_NB && (D / 8 + n - 1) / n > per) ++n;
    return n;
  }

  int R = 0, P = 0;
  bool cfg_on = false, prefilled = false;
  int tf_step = 0;
  std::map<std::tuple<int, bool, bool, bool, int, int>, cudaGraphExec_t> graphs;
  // Session 24: the prefill (run_cond_stream: ~250 launches, 4 of 11 per layer cuBLAS GEMMs) captured once per row
  // count and replayed; CUBEFORGE_GPT_PREFILL_GRAPH=0 (or a capture that fails) keeps the eager launches.
  // Keyed by (R, Rpre).
  std::map<std::pair<int, int>, cudaGraphExec_t> prefill_graphs;
  bool prefill_graph_on = true;
  // Session 38: the rows the prefill computes (prefill_rows.h): R, or the first prompt's rows when every prompt repeats
  // them (variations of one prompt), whose KV slots are then copied to the other rows. CUBEFORGE_GPT_PREFILL_SHARE=0
  // computes every row (measurement and check knob).
  int Rpre = 0;
  bool prefill_share = true;
  // and the decode attention then reads every prompt's cond slots from the first prompt's rows (AttnParams::
  // prefix_rows): P with CFG, R without; 0 (own rows) where the prefill computed every row.
  // CUBEFORGE_GPT_PREFIX_SHARE=0: own rows always (measurement knob).
  bool prefix_share = true;
  int prefix_rows() const { return prefix_share && Rpre < R ? (cfg_on ? P : R) : 0; }

  ~Impl() {
    for (auto& kv : graphs) cudaGraphExecDestroy(kv.second);
    for (auto& kv : prefill_graphs) cudaGraphExecDestroy(kv.second);
    if (h_tokens) cudaFreeHost(h_tokens);
    if (blas) cublasDestroy(blas);
    if (stream) cudaStreamDestroy(stream);
  }

  template <typename T>
  T* dalloc(size_t count) {
    return mem.alloc<T>(count);
  }

  // Layer l's cache [R][H][Tdual][HD], layers R rows apart (the generation's rows, set by prefill, which writes the
  // cache; the graphs are captured per R), so a generation's caches are packed at the start of the allocation
  // whatever the engine's capacity. Session 30: measured equal to the Rmax stride (one prompt in an 8-row engine
  // 0.7845 / 0.7845 vs 0.7854 / 0.7841 ms); the capacity's +0.2-0.8% at one prompt is neither this nor the kernels'
  // shared-memory limits (docs/cuda-gpt.md, session 30).
  bf16* kc_layer(bf16* base, int l) const { return base + (size_t)l * R * H * Tdual * HD; }

  // Weights and buffers (gpt_engine_upload.cuh)
  void load(const GptWeightSource& src);
  void alloc_buffers();

  // Prefill (gpt_engine_prefill.cuh)
  void gemm(const bf16* A, int M, int K, const bf16* W, int Nn, float* C);
  cudaGraphExec_t prefill_graph();
  void run_cond_stream();

  // Decode step and its graphs (gpt_engine_step.cuh)
  GemvParams base_params() const;
  void block_step(const StreamW& w, bf16* k_l, bf16* v_l, int T, int coff, int maxs, bool attn, const float* add2,
                  float* save_y);
  void enqueue_step(const StepKind& k);
  cudaGraphExec_t graph(bool causal, bool topp, int steps, double* capture_ms);
  void write_ctl(const Ctl& c) { CF_CUDA(cudaMemcpyAsync(ctl, &c, sizeof(Ctl), cudaMemcpyHostToDevice, stream)); }
  void reset_pos() { CF_CUDA(cudaMemsetAsync(&dyn->pos, 0, sizeof(int), stream)); }
  Ctl make_ctl(double guidance) const;

  // Diagnostics (gpt_engine_diag.cuh)
  void poison_state();
  unsigned long long* tl_slot(const char* name);
  template <typename Params>
  void diag_slots(Params& q, const char* name);
  void timeline_report(bool causal, bool topp);
  void mlp_phase_report(const std::vector<unsigned long long>& h);
  void qkv_phase_report(const std::vector<unsigned long long>& mph, double origin, int nred);
};

}  // namespace cubeforge::cuda
