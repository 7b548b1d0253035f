// CUDA GPT engine: bf16 weight arena, cond-stream prefill (cuBLAS; repeated prompts computed once), fused decode step
// (gpt_kernels.cuh) captured as CUDA graphs of several steps, tokens streamed through mapped pinned memory + events.
// See docs/cuda-gpt.md.
#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "cubeforge/cuda_gpt.h"
#include "cublas_check.h"
#include "gpt_card_rules.h"
#include "gpt_generic.h"
#include "gpt_gemv_launch.cuh"
#include "gpt_kernels.cuh"
#include "prefill_rows.h"
#include "token_stream.h"

namespace cubeforge::cuda {
using namespace detail;

namespace {

// EngineOptions::variant: the bits that still select something (cuda_gpt.h); create() refuses the others.
constexpr unsigned kVarRowMajor = 8, kVarBf16Dec = 16, kVarBf16Pre = 32;
constexpr unsigned kVarNoAttn = 1u << 18, kVarL2Weights = 1u << 19, kVarTimeline = 1u << 21, kVarNoLnStats = 1u << 22;
constexpr unsigned kVarPoison = 1u << 23, kVarHash = 1u << 24;
constexpr unsigned kVarKnown = kVarRowMajor | kVarBf16Dec | kVarBf16Pre | kVarNoAttn | kVarL2Weights | kVarTimeline |
                               kVarNoLnStats | kVarPoison | kVarHash;

double now_ms() {
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

}  // namespace

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
  void poison_state() {
    const size_t pitch = (size_t)Tdual * HD * 2, width = (size_t)(Tdual - s) * HD * 2, rows = (size_t)L * Rmax * H;
    CF_CUDA(cudaMemset2DAsync(kc + (size_t)s * HD, pitch, 0xFF, width, rows, stream));
    CF_CUDA(cudaMemset2DAsync(vc + (size_t)s * HD, pitch, 0xFF, width, rows, stream));
    CF_CUDA(cudaMemsetAsync(skc, 0xFF, (size_t)Rmax * H * N * HD * 2, stream));
    CF_CUDA(cudaMemsetAsync(svc, 0xFF, (size_t)Rmax * H * N * HD * 2, stream));
    CF_CUDA(cudaMemsetAsync(qkv, 0xFF, (size_t)Rmax * QKV_LD * sizeof(float), stream));
    CF_CUDA(cudaMemsetAsync(att, 0xFF, (size_t)Rmax * D * 2, stream));
  }
  // Timeline diagnostics (bit 21): stamps of every decode kernel of one step (TlStamp), printed by generate().
  bool diag_tl = false;
  unsigned long long* tl = nullptr;
  static constexpr int kTlMax = 256;
  int kseq = 0;
  std::vector<std::string> kname;
  // Every decode kernel of a step takes the next index (and names it, outside step 0) here.
  unsigned long long* tl_slot(const char* name) {
    if (kseq >= kTlMax) return nullptr;
    if ((int)kname.size() <= kseq) kname.resize(kseq + 1);
    if (!step0_now) kname[kseq] = name;
    const int k = kseq++;
    return diag_tl ? tl + 3 * (size_t)k : nullptr;
  }
  // Output hashes (bit 24, in a binary built with -DCF_DIAG_HASH): [N][kHashK][kHashSub] words, zeroed before each
  // generate and fetched by diag_output_hashes().
  unsigned* hlog = nullptr;
  // The next decode kernel's diagnostic slots: its timeline stamps (bit 21) and its output-hash words (bit 24).
  template <typename Params>
  void diag_slots(Params& q, const char* name) {
    q.tl = tl_slot(name);
    q.hl = HashLog{hlog && kseq >= 1 && kseq <= kHashK ? hlog + (size_t)(kseq - 1) * kHashSub : nullptr, &dyn->pos};
  }
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

  // ---------------------------------------------------------------------------------------------------------------
  void load(const GptWeightSource& src) {
    // Plan the arena (two passes: count, then carve).
    char* arena = nullptr;
    size_t used = 0;
    auto carve = [&](size_t bytes) -> void* {
      used = (used + 255) & ~size_t(255);
      void* p = arena ? arena + used : nullptr;
      used += bytes;
      return p;
    };
    auto carve_stream = [&](StreamW& w) {  // this order and these sizes place every weight of the arena
      w.qkv = (bf16*)carve((size_t)3 * D * D * 2);
      w.vb = (bf16*)carve(D * 2);
      w.qn = (float*)carve(HD * 4);
      w.kn = (float*)carve(HD * 4);
      w.o = (bf16*)carve((size_t)D * D * 2);
      w.ob = (bf16*)carve(D * 2);
      w.gu = (bf16*)carve((size_t)2 * F * D * 2);
      w.gub = (bf16*)carve(2 * F * 2);
      w.dn = (bf16*)carve((size_t)D * F * 2);
      w.dnb = (bf16*)carve(D * 2);
    };
    auto plan = [&]() {
      used = 0;
      layers.assign(L, LayerW{});
      for (int l = 0; l < L; ++l) {
        LayerW& w = layers[l];
        w.cond_pre_only = (l == L - 1);
        carve_stream(w.x);
        if (!w.cond_pre_only) {
          carve_stream(w.c);
        } else {
          w.c.qkv = (bf16*)carve((size_t)2 * D * D * 2);
          w.c.vb = (bf16*)carve(2 * D * 2);
          w.c.kn = (float*)carve(HD * 4);
        }
      }
      carve_stream(single);
      lm = (bf16*)carve((size_t)Vs * D * 2);
      wte = (float*)carve((size_t)V * D * 4);
    };
    plan();
    const size_t arena_bytes = used;
    {
      size_t fr = 0, tot = 0;
      CF_CUDA(cudaMemGetInfo(&fr, &tot));
      const size_t need = arena_bytes + ((size_t)256 << 20);
      if (need > fr)
        throw cubeforge::Error("CUDA GPT: the weights need " + std::to_string(arena_bytes >> 20) + " MiB but only " +
                               std::to_string(fr >> 20) + " MiB of " + std::to_string(tot >> 20) +
                               " MiB are free on " + dev_name);
    }
    arena = dalloc<char>(arena_bytes);
    weights_bytes = arena_bytes;
    plan();

    float* staging = nullptr;
    CF_CUDA(cudaMalloc(&staging, (size_t)V * D * 4));
    struct Free {
      float* p;
      ~Free() { cudaFree(p); }
    } free_staging{staging};
    auto fetch = [&](const std::string& name, const std::vector<int64_t>& shape) {
      std::vector<float> v = src.get(name, shape);
      size_t n = 1;
      for (auto d : shape) n *= (size_t)d;
      if (v.size() != n)
        throw cubeforge::Error("CUDA GPT: tensor " + name + " has " + std::to_string(v.size()) + " values, expected " +
                               std::to_string(n));
      for (float f : v)
        if (!std::isfinite(f)) throw cubeforge::Error("CUDA GPT: tensor " + name + " holds a non-finite value");
      return v;
    };
    // Decode-only matrices (x stream, single block, lm_head) take the blocked GEMV layout (gemv_w_off; variant bit 3:
    // row-major); the cond-stream matrices stay row-major for cuBLAS.
    int blocked_now = 0;
    auto up = [&](bf16* dst, const std::string& name, std::vector<int64_t> shape, int mode = 0, long rows_used = -1) {
      std::vector<float> v = fetch(name, shape);
      const long rows = rows_used >= 0 ? rows_used : (long)shape[0];
      const long cols = shape.size() > 1 ? (long)shape[1] : 1;
      // Stream-ordered copy: a plain cudaMemcpy from pageable memory can return before its DMA has landed, and
      // this (non-blocking) stream would not wait for it.
      CF_CUDA(cudaMemcpyAsync(staging, v.data(), (size_t)rows * cols * 4, cudaMemcpyHostToDevice, stream));
      if (blocked_now == 2)  // the fused MLP's down-proj (hidden-slice layout)
        convert_mlp_down_kernel<<<1024, 256, 0, stream>>>(staging, dst);
      else
        convert_kernel<<<1024, 256, 0, stream>>>(staging, dst, rows, cols, mode, blocked_now);
      CF_CUDA(cudaGetLastError());
      CF_CUDA(cudaStreamSynchronize(stream));
    };
    auto bias = [&](bf16* dst, const std::string& name, int64_t n, int mode = 0) {
      if (cfg.bias) {
        up(dst, name, {n}, mode);
      } else {
        CF_CUDA(cudaMemsetAsync(dst, 0, n * 2, stream));
      }
    };
    auto f32 = [&](float* dst, const std::string& name, std::vector<int64_t> shape) {
      std::vector<float> v = fetch(name, shape);
      CF_CUDA(cudaMemcpyAsync(dst, v.data(), v.size() * 4, cudaMemcpyHostToDevice, stream));
      CF_CUDA(cudaStreamSynchronize(stream));
    };
    // One stream (x, c or single) under the caller's blocked_now: attention pre-projections, c_proj, MLP.
    auto upload_stream = [&](const StreamW& w, const std::string& pre, const std::string& proj,
                             const std::string& mlp) {
      up(w.qkv, pre + "c_qk.weight", {2 * D, D});
      up(w.qkv + (size_t)2 * D * D, pre + "c_v.weight", {D, D});  // blocked: 8-row groups, so the offset still holds
      bias(w.vb, pre + "c_v.bias", D);
      f32(w.qn, pre + "q_norm.weight", {HD});
      f32(w.kn, pre + "k_norm.weight", {HD});
      up(w.o, proj + "weight", {D, D});
      bias(w.ob, proj + "bias", D);
      up(w.gu, mlp + "gate_proj.weight", {F, D}, 1);
      up(w.gu, mlp + "up_proj.weight", {F, D}, 2);
      bias(w.gub, mlp + "gate_proj.bias", F, 1);
      bias(w.gub, mlp + "up_proj.bias", F, 2);
      const int keep = blocked_now;
      if (blocked_now && mlp_on) blocked_now = 2;
      up(w.dn, mlp + "down_proj.weight", {D, F});
      blocked_now = keep;
      bias(w.dnb, mlp + "down_proj.bias", D);
    };
    for (int l = 0; l < L; ++l) {
      LayerW& w = layers[l];
      const std::string b = "transformer.dual_blocks." + std::to_string(l) + ".";
      blocked_now = blocked;
      upload_stream(w.x, b + "attn.pre_x.", b + "post_1.c_proj.", b + "post_1.mlp.");
      blocked_now = 0;
      if (!w.cond_pre_only) {
        upload_stream(w.c, b + "attn.pre_c.", b + "post_2.c_proj.", b + "post_2.mlp.");
      } else {
        up(w.c.qkv, b + "attn.pre_c.c_k.weight", {D, D});
        up(w.c.qkv + (size_t)D * D, b + "attn.pre_c.c_v.weight", {D, D});
        bias(w.c.vb, b + "attn.pre_c.c_k.bias", D);
        bias(w.c.vb + D, b + "attn.pre_c.c_v.bias", D);
        f32(w.c.kn, b + "attn.pre_c.k_norm.weight", {HD});
      }
    }
    blocked_now = blocked;
    const std::string sb = "transformer.single_blocks.0.";
    upload_stream(single, sb + "attn.", sb + "attn.c_proj.", sb + "mlp.");
    up(lm, "lm_head.weight", {V, D}, 0, Vs);
    blocked_now = 0;
    f32(wte, "transformer.wte.weight", {V, D});
  }

  void alloc_buffers() {
    Tdual = s + N;
    maxs_dual = (Tdual + ACH - 1) / ACH;
    maxs_single = (N + ACH - 1) / ACH;
    if (std::max(maxs_dual, maxs_single) > ATT_MAXSPLIT)
      throw cubeforge::Error("CUDA GPT: " + std::to_string(std::max(maxs_dual, maxs_single)) +
                             " attention splits per head exceed the fast kernels' limit of " +
                             std::to_string(ATT_MAXSPLIT) + " (sequence too long)");
    const size_t kvd = (size_t)L * Rmax * H * Tdual * HD, kvs = (size_t)Rmax * H * N * HD;
    kc = dalloc<bf16>(kvd);
    vc = dalloc<bf16>(kvd);
    skc = dalloc<bf16>(kvs);
    svc = dalloc<bf16>(kvs);
    kv_bytes = (kvd + kvs) * 2 * 2;
    rope = dalloc<float2>((size_t)N * (HD / 2));
    {
      std::vector<float2> t((size_t)N * (HD / 2));
      for (int j = 0; j < HD / 2; ++j) {
        const float e = (float)(2 * j) / (float)HD;
        const float inv = 1.0f / std::pow((float)cfg.rope_theta, e);
        for (int p = 0; p < N; ++p) {
          const float a = (float)p * inv;
          t[(size_t)p * (HD / 2) + j] = make_float2(std::cos(a), std::sin(a));
        }
      }
      CF_CUDA(cudaMemcpy(rope, t.data(), t.size() * sizeof(float2), cudaMemcpyHostToDevice));
    }
    x = dalloc<float>((size_t)Rmax * D);
    stats = dalloc<float>((size_t)Rmax * NSLOT * 2);
    qkv = dalloc<float>((size_t)Rmax * QKV_LD);
    att = dalloc<bf16>((size_t)Rmax * D);
    att_lo = dalloc<bf16>((size_t)Rmax * D);
    hbuf = dalloc<bf16>((size_t)Rmax * F);
    hbuf_lo = dalloc<bf16>((size_t)Rmax * F);
    CF_CUDA(cudaMemset(att_lo, 0, (size_t)Rmax * D * 2));
    CF_CUDA(cudaMemset(hbuf_lo, 0, (size_t)Rmax * F * 2));
    sconst = dalloc<float>((size_t)Rmax * D);
    const int maxs = std::max(maxs_dual, maxs_single);
    atstride = maxs;
    atpart = dalloc<unsigned long long>((size_t)Rmax * H * maxs * (HD + 2));
    CF_CUDA(cudaMemset(atpart, 0, (size_t)Rmax * H * maxs * (HD + 2) * sizeof(unsigned long long)));
    aep = dalloc<unsigned>((size_t)Rmax * H);  // epochs start at 1: the cleared words read as not yet written
    CF_CUDA(cudaMemset(aep, 0, (size_t)Rmax * H * sizeof(unsigned)));
    ks_scratch = dalloc<float>((size_t)(D / 8) * 8 * 16 * 8);  // tiles x KSPLIT (<= 8) x 16 rows x 8
    ks_cnt = dalloc<unsigned>(D / 8);
    tl = dalloc<unsigned long long>(3 * (size_t)kTlMax);
#ifdef CF_DIAG_PHASES
    mlp_ph = dalloc<unsigned long long>((size_t)MLP_NB * MLP_PH);
    qkv_ph_blocks = 2 * nsm;  // Gemv1 grids: at most 2 blocks per SM
    qkv_ph = dalloc<unsigned long long>((size_t)qkv_ph_blocks * GEMV_PH);
#endif
    CF_CUDA(cudaMemset(ks_cnt, 0, (D / 8) * sizeof(unsigned)));
    lm_blocks = GemvLm::blocks(Vs);
    lm_val = dalloc<float>((size_t)MAXP * lm_blocks);
    lm_idx = dalloc<int>((size_t)MAXP * lm_blocks);
    guided = dalloc<float>((size_t)MAXP * Vs);
    raw = dalloc<float>((size_t)Rmax * Vs);
    tokens = dalloc<int>((size_t)MAXP * N);
    CF_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&h_tokens), (size_t)MAXP * N * sizeof(int), cudaHostAllocMapped));
    CF_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&h_tokens_dev), h_tokens, 0));
    ctl = dalloc<Ctl>(1);
    dyn = dalloc<Dyn>(1);
    CF_CUDA(cudaMemset(dyn, 0, sizeof(Dyn)));
    const size_t M = (size_t)Rmax * s;
    pc = dalloc<float>(M * D);
    pacc = dalloc<float>(2 * M * 2 * F);  // hi rows then lo rows (split_pre)
    // Cleared once so that compute-sanitizer initcheck can run past the prefill: it reported the reads of this
    // cuBLAS output by cond_qkv_post_kernel as uninitialised (session 7), although they are rows the GEMM just wrote
    // (cuda-check's prefill-dependent errors are unchanged); initcheck does not seem to see the library's writes.
    CF_CUDA(cudaMemset(pacc, 0, 2 * M * 2 * F * sizeof(float)));
    pact = dalloc<bf16>(2 * M * F);
    pq = dalloc<float>(M * D);
    patt = dalloc<bf16>(2 * M * D);
    if (mlp_on) {
      mlp_part = dalloc<float>((size_t)(D / 8) * MLP_NB * Rmax * 8);
      // epoch 0 never occurs (the first launch's is 1), so the cleared words read as not yet written
      mlp_tagged = dalloc<unsigned long long>(MLP_TAG_WORDS);
      CF_CUDA(cudaMemset(mlp_tagged, 0, MLP_TAG_WORDS * sizeof(unsigned long long)));
      mlp_ctr = dalloc<unsigned long long>(1);
      CF_CUDA(cudaMemset(mlp_ctr, 0, sizeof(unsigned long long)));
      size_t m = 0;
      for (int r = 1; r <= Rmax; ++r) m = std::max(m, mlp_smem(r, mlp_slots(r)));
      for (MlpKernel k : kMlpKernels)
        CF_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)m));
    }
    if (diag_hash) hlog = dalloc<unsigned>((size_t)N * kHashK * kHashSub);
    GemvQkv::prepare();
    GemvOproj::prepare();
    GemvGateUp::prepare();
    GemvDown::prepare();
    GemvLm::prepare();
    Gemv1Qkv::prepare();
    Gemv1QkvSm::prepare();
    Gemv1Down::prepare();
    Gemv1GateUp::prepare();
  }

  // ---------------------------------------------------------------------------------------------------------------
  void gemm(const bf16* A, int M, int K, const bf16* W, int Nn, float* C) {
    const float one = 1.f, zero = 0.f;
    CF_CUBLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, Nn, M, K, &one, W, CUDA_R_16BF, K, A, CUDA_R_16BF, K, &zero,
                         C, CUDA_R_32F, Nn, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // The prefill graph of the current rows and computed rows (captured on first use), or null: eager prefill.
  cudaGraphExec_t prefill_graph() {
    if (!prefill_graph_on) return nullptr;
    auto it = prefill_graphs.find({R, Rpre});
    if (it != prefill_graphs.end()) return it->second;
    try {
      cudaGraphExec_t exec = capture_graph(stream, [&] { run_cond_stream(); });
      prefill_graphs[{R, Rpre}] = exec;
      return exec;
    } catch (const cubeforge::Error& e) {
      std::fprintf(stderr, "cubeforge cuda: prefill graph capture failed (%s); eager prefill\n", e.what());
      prefill_graph_on = false;
      return nullptr;
    }
  }

  // The cond stream of rows [0, Rpre) into the caches (laid out for R rows), then, where Rpre < R, their slots copied
  // to the other prompts' rows: with CFG row 1 (uncond) to [P, 2P) first, since row 1 is itself a cond row's place.
  void run_cond_stream() {
    const int M = Rpre * s;
    const bool sp = split_pre != 0;
    const int Mg = sp ? 2 * M : M;  // GEMM rows: hi parts, then lo parts
    const long loD = sp ? (long)M * D : 0, loF = sp ? (long)M * F : 0;
    const int eb = std::min<long>(4096, ((long)M * D + 255) / 256);
    const dim3 agrid(Rpre, H, (s + 3) / 4);
    for (int l = 0; l < L; ++l) {
      const StreamW& w = layers[l].c;
      bf16* k_l = kc_layer(kc, l);
      bf16* v_l = kc_layer(vc, l);
      ln_rows_kernel<<<M, 256, 0, stream>>>(pc, pact, cfg.eps, loD);
      CF_CUDA(cudaGetLastError());
      if (!layers[l].cond_pre_only) {
        gemm(pact, Mg, D, w.qkv, 3 * D, pacc);
        cond_qkv_post_kernel<<<dim3(M, H), 128, 0, stream>>>(pacc, 3 * D, sp ? (long)M * 3 * D : 0, w.vb, 0, w.qn,
                                                             w.kn, s, Tdual, pq, k_l, v_l);
        CF_CUDA(cudaGetLastError());
        cond_attn_kernel<<<agrid, 128, 0, stream>>>(pq, k_l, v_l, s, Tdual, patt, loD);
        CF_CUDA(cudaGetLastError());
        gemm(patt, Mg, D, w.o, D, pacc);
        bias_resid_kernel<<<eb, 256, 0, stream>>>(pacc, loD, w.ob, pc, (long)M * D);
        CF_CUDA(cudaGetLastError());
        ln_rows_kernel<<<M, 256, 0, stream>>>(pc, pact, cfg.eps, loD);
        CF_CUDA(cudaGetLastError());
        gemm(pact, Mg, D, w.gu, 2 * F, pacc);
        swiglu_rows_kernel<<<4096, 256, 0, stream>>>(pacc, sp ? (long)M * 2 * F : 0, w.gub, pact, loF, M);
        CF_CUDA(cudaGetLastError());
        gemm(pact, Mg, F, w.dn, D, pacc);
        bias_resid_kernel<<<eb, 256, 0, stream>>>(pacc, loD, w.dnb, pc, (long)M * D);
        CF_CUDA(cudaGetLastError());
      } else {
        gemm(pact, Mg, D, w.qkv, 2 * D, pacc);
        cond_qkv_post_kernel<<<dim3(M, H), 128, 0, stream>>>(pacc, 2 * D, sp ? (long)M * 2 * D : 0, w.vb, 1, nullptr,
                                                             w.kn, s, Tdual, pq, k_l, v_l);
        CF_CUDA(cudaGetLastError());
      }
    }
    if (Rpre < R) {
      const size_t lstride = (size_t)R * H * Tdual * HD;
      if (cfg_on) {  // rows [0, 2) computed: cond at 0, uncond at 1
        cond_rows_copy_kernel<<<dim3(L, H, P), 256, 0, stream>>>(kc, vc, lstride, Tdual, s, 1, P);
        CF_CUDA(cudaGetLastError());
      }
      cond_rows_copy_kernel<<<dim3(L, H, P - 1), 256, 0, stream>>>(kc, vc, lstride, Tdual, s, 0, 1);
      CF_CUDA(cudaGetLastError());
    }
  }

  GemvParams base_params() const {
    GemvParams p = {};
    p.blocked = blocked;
    p.wmask = diag_l2w ? ((1ull << 20) - 1) : 0;
    p.R = R;
    p.X = x;
    p.stats = diag_nostats ? nullptr : stats;
    p.eps = cfg.eps;
    p.resid = x;
    p.stats_out = stats;
    p.ks_scratch = ks_scratch;
    p.ks_cnt = ks_cnt;
    p.split = split_dec;
    p.tl = nullptr;
    return p;
  }

  void block_step(const StreamW& w, bf16* k_l, bf16* v_l, int T, int coff, int maxs, bool attn, const float* add2,
                  float* save_y) {
    const bool pdl = opts.pdl;
    if (attn) {
      GemvParams q = base_params();
      q.W = w.qkv;
      q.N = 3 * D;
      q.bias = w.vb;
      q.bias_from = 2 * D;
      q.out_f = qkv;
      q.ld_out = QKV_LD;
      diag_slots(q, single_now ? "s.qkv" : "qkv");
      if (qkv_ph && diag_tl && !single_now && cur_layer == L / 2 + 1 && !step0_now && R <= qkv_sm_rows &&
          Gemv1QkvSm::grid_for(3 * D, nsm) <= qkv_ph_blocks)
        q.ph = qkv_ph;
      if (!(R <= qkv_sm_rows ? Gemv1QkvSm::run(q, stream, pdl, nsm, qkv_blocks)
                             : Gemv1Qkv::run(q, stream, pdl, nsm, qkv_blocks_wide)))
        GemvQkv::run(q, stream, pdl, nsm);
      AttnParams a = {};
      a.qkv = qkv;
      a.qnorm = w.qn;
      a.knorm = w.kn;
      a.kc = k_l;
      a.vc = v_l;
      a.T = T;
      a.coff = coff;
      a.prefix_rows = coff > 0 ? prefix_rows() : 0;
      a.slot0_only = 0;
      a.rope = rope;
      a.dyn = dyn;
      a.out = att;
      a.out_lo = att_lo;
      a.maxs = maxs;
      a.tpart = atpart;
      a.ep = aep;
      a.tstride = atstride;
      a.early_trig = early_trig & 1;
      diag_slots(a, single_now ? "s.attn" : "attn");
      if (!diag_no_attn)
        launch(R <= attn_spread_rows ? attn_decode_kernel<true, false>
               : a.prefix_rows       ? attn_decode_kernel<false, true>
                                     : attn_decode_kernel<false, false>,
               dim3(maxs, H, R), dim3(128), 0, stream, pdl, a);
      GemvParams o = base_params();
      o.W = w.o;
      o.N = D;
      o.A = att;
      o.A_lo = att_lo;
      o.bias = w.ob;
      o.save_y = save_y;
      o.early_trig = (early_trig >> 1) & 1;
      diag_slots(o, single_now ? "s.oproj" : "oproj");
      GemvOproj::run(o, stream, pdl, nsm, oproj_blocks);
    }
    if (mlp_on) {
      MlpParams m = {};
      m.g = base_params();
      m.g.add2 = add2;
      diag_slots(m.g, single_now ? "s.mlp" : "mlp");
      m.Wgu = w.gu;
      m.bgu = w.gub;
      m.Wdn = w.dn;
      m.bdn = w.dnb;
      m.part = mlp_part;
      m.tagged = mlp_tagged;
      m.ctr = mlp_ctr;
      m.nst = mlp_slots(R);
      m.pre = mlp_pre(m.nst);
      m.spin_limit = 1ull << 24;
      m.nred = mlp_reducers(R);
      if (mlp_ph && diag_tl && !single_now && cur_layer == L / 2 && !step0_now && R <= 2) {
        m.ph = mlp_ph;
        ph_kseq = kseq;
      }
      launch(mlp_kernel_for(R), dim3(MLP_NB), dim3(MLP_THREADS), mlp_smem(R, m.nst), stream, pdl, m);
      return;
    }
    GemvParams g = base_params();
    g.W = w.gu;
    g.N = 2 * F;
    g.bias = w.gub;
    g.out = hbuf;
    g.out_lo = hbuf_lo;
    g.ld_out = F;
    diag_slots(g, single_now ? "s.gateup" : "gateup");
    if (!Gemv1GateUp::run(g, stream, pdl, nsm)) GemvGateUp::run(g, stream, pdl, nsm);
    GemvParams d = base_params();
    d.W = w.dn;
    d.N = D;
    d.A = hbuf;
    d.A_lo = hbuf_lo;
    d.bias = w.dnb;
    d.add2 = add2;
    diag_slots(d, single_now ? "s.down" : "down");
    if (!Gemv1Down::run(d, stream, pdl, nsm)) GemvDown::run(d, stream, pdl, nsm);
  }

  void enqueue_step(const StepKind& k) {
    const bool pdl = opts.pdl;
    kseq = 0;
    single_now = false;
    step0_now = k.step0;
    if (k.step0) {  // x = BOS embedding in every row (plain launch: nothing before it in the stream is a kernel)
      init_rows_kernel<<<64, 256, 0, stream>>>(wte, cfg.bos_id(), R, x, stats);
      CF_CUDA(cudaGetLastError());
    }
    for (int l = 0; l < L; ++l) {
      cur_layer = l;
      const bool last = (l == L - 1);
      const float* add2 = (last && !k.step0 && !k.causal) ? sconst : nullptr;
      block_step(layers[l].x, kc_layer(kc, l), kc_layer(vc, l), Tdual, s, maxs_dual, true, add2, nullptr);
    }
    const bool sattn = k.step0 || k.causal;
    single_now = true;
    block_step(single, skc, svc, N, 0, maxs_single, sattn, nullptr, k.step0 ? sconst : nullptr);
    GemvParams p = base_params();
    p.W = lm;
    p.N = Vs;
    p.ctl = ctl;
    p.dyn = dyn;
    p.guided = guided;
    p.raw = raw;
    p.lm_val = lm_val;
    p.lm_idx = lm_idx;
    p.tail = k.topp ? 0 : 1;
    p.wte = wte;
    p.x_next = x;
    p.stats_next = stats;
    p.tokens = tokens;
    p.host_tokens = h_tokens_dev;
    diag_slots(p, "lm_head");
    if (lm_ring_on && R <= 8) {
      LmRingParams lq = {p, lm_ring_slots(R), 0};
      lq.pre = lm_pre_env >= 0 ? std::min(lm_pre_env, lq.nst) : lq.nst;
      launch(lm_ring_kernel, dim3(Vs / LMR_ROWS), dim3(LMR_THREADS), lm_ring_smem(R, lq.nst), stream, pdl, lq);
    } else {
      GemvLm::run(p, stream, pdl, nsm);
    }
    if (k.topp) {
      ToppParams t = {ctl, dyn, guided, wte, x, stats, tokens, h_tokens_dev, tl_slot("topp")};
      launch(topp_kernel, dim3(P), dim3(TOPP_THREADS), 0, stream, pdl, t);
    }
    if (!k.step0) kseq_graph = kseq;
  }

  cudaGraphExec_t graph(bool causal, bool topp, int steps, double* capture_ms) {
    const auto key = std::make_tuple(R, cfg_on, causal, topp, steps, prefix_rows());
    auto it = graphs.find(key);
    if (it != graphs.end()) return it->second;
    const double t0 = now_ms();
    cudaGraphExec_t exec = capture_graph(stream, [&] {
      for (int i = 0; i < steps; ++i) enqueue_step(StepKind{false, causal, topp});
    });
    graphs[key] = exec;
    if (capture_ms) *capture_ms += now_ms() - t0;
    return exec;
  }

  // Timeline of one decode step (1-step graph replays at position N/2, after a generate): per kernel kind the mean
  // span (start -> end), the mean increment of the step's critical path (end - previous end) and how early the
  // kernel started before its predecessor ended. Diagnostics only (variant bit 21).
  void timeline_report(bool causal, bool topp) {
    cudaGraphExec_t g = graph(causal, topp, 1, nullptr);
    const int nk = std::min(kseq_graph, kTlMax), reps = 20;
    std::vector<unsigned long long> h(3 * (size_t)nk);
    std::vector<double> span(nk, 0), inc(nk, 0), early(nk, 0), waitlag(nk, 0), vis(nk, 0);
    double total = 0;
    const int mid = N / 2;
    for (int rep = 0; rep < reps; ++rep) {
      CF_CUDA(cudaMemcpyAsync(&dyn->pos, &mid, sizeof(int), cudaMemcpyHostToDevice, stream));
      CF_CUDA(cudaMemsetAsync(tl, 0xFF, 3 * sizeof(unsigned long long) * kTlMax, stream));
      if (mlp_ph) CF_CUDA(cudaMemsetAsync(mlp_ph, 0, sizeof(unsigned long long) * MLP_NB * MLP_PH, stream));
      if (qkv_ph) CF_CUDA(cudaMemsetAsync(qkv_ph, 0, sizeof(unsigned long long) * qkv_ph_blocks * GEMV_PH, stream));
      CF_CUDA(cudaGraphLaunch(g, stream));
      CF_CUDA(cudaMemcpyAsync(h.data(), tl, h.size() * 8, cudaMemcpyDeviceToHost, stream));
      CF_CUDA(cudaStreamSynchronize(stream));
      auto S = [&](int i) { return (double)h[3 * i]; };
      auto W = [&](int i) { return (double)h[3 * i + 1]; };
      auto E = [&](int i) { return (double)~h[3 * i + 2]; };
      for (int i = 0; i < nk; ++i) {
        span[i] += E(i) - S(i);
        inc[i] += i ? E(i) - E(i - 1) : E(i) - S(i);
        early[i] += i ? E(i - 1) - S(i) : 0.0;
        waitlag[i] += W(i) - S(i);
        vis[i] += i ? W(i) - E(i - 1) : 0.0;
      }
      total += E(nk - 1) - S(0);
    }
    std::map<std::string, std::array<double, 6>> agg;
    std::vector<std::string> order;
    for (int i = 0; i < nk; ++i) {
      auto it = agg.find(kname[i]);
      if (it == agg.end()) {
        order.push_back(kname[i]);
        agg[kname[i]] = {0, 0, 0, 0, 0, 0};
      }
      auto& a = agg[kname[i]];
      a[0] += 1;
      a[1] += span[i] / reps;
      a[2] += inc[i] / reps;
      a[3] += early[i] / reps;
      a[4] += waitlag[i] / reps;
      a[5] += vis[i] / reps;
    }
    std::fprintf(stderr, "timeline: one step (1-step graph, %d rows, %s, pos %d, %d replays): %d kernels, first start "
                 "-> last end %.1f us\n", R, topp ? "top-p" : "argmax", mid, reps, nk, total / reps / 1000.0);
    // handoff: the predecessor's last block end -> this kernel's first return from its wait (session 18: 0.5-0.8 us
    // at every boundary of the one-prompt step, so the boundaries themselves are not where the step's time goes)
    std::fprintf(stderr, "timeline: %-9s %4s %10s %12s %12s %12s %12s %12s\n", "kernel", "n", "span us",
                 "increment us", "sum incr us", "early us", "wait-lag us", "handoff us");
    for (const auto& nm : order) {
      const auto& a = agg[nm];
      std::fprintf(stderr, "timeline: %-9s %4d %10.2f %12.2f %12.1f %12.2f %12.2f %12.2f\n", nm.c_str(), (int)a[0],
                   a[1] / a[0] / 1000.0, a[2] / a[0] / 1000.0, a[2] / 1000.0, a[3] / a[0] / 1000.0,
                   a[4] / a[0] / 1000.0, a[5] / a[0] / 1000.0);
    }
    if (mlp_ph && ph_kseq > 0 && ph_kseq < nk) mlp_phase_report(h);
  }

  // Phase stamps (CF_DIAG_PHASES builds, with the timeline): the middle dual layer's MLP per block (last replay), us
  // relative to the MLP's own last block end (timeline slot ph_kseq - 1): medians and maxima of the reducers and of
  // the blocks that leave after their partials, then per ring stage when the producer requested it and when consumer
  // warp 0 got it (all blocks).
  void mlp_phase_report(const std::vector<unsigned long long>& h) {
    std::vector<unsigned long long> ph((size_t)MLP_NB * MLP_PH);
    CF_CUDA(cudaMemcpy(ph.data(), mlp_ph, ph.size() * 8, cudaMemcpyDeviceToHost));
    const double prev_end = (double)~h[3 * (ph_kseq - 1) + 2];
    const int nred = mlp_reducers(R);
    std::vector<std::vector<double>> red(MLP_PH), lv(MLP_PH), all(MLP_PH);
    for (int b = 0; b < MLP_NB; ++b) {
      const unsigned long long* t = &ph[(size_t)b * MLP_PH];
      auto& grp = (int)t[MLP_PH_RANK] >= MLP_NB - nred ? red : lv;
      for (int i = 0; i < MLP_PH; ++i)
        if (t[i] && i != MLP_PH_RANK) {
          const double us = ((double)t[i] - prev_end) / 1000.0;
          grp[i].push_back(us);
          all[i].push_back(us);
        }
    }
    static const char* names[MLP_PH_RANK] = {"entry", "wait returned", "LN prologue", "gate/up MMAs", "SwiGLU",
                                    "down-proj", "producer done", "partials out", "sums read", "end"};
    auto stat = [](std::vector<double> v, double q) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[std::min(v.size() - 1, (size_t)(q * (double)(v.size() - 1) + 0.5))];
    };
    std::fprintf(stderr,
                 "mlp phases (layer %d, us relative to the MLP's last block end; reducers %zu, leavers %zu; pre %d of "
                 "%d)\n", L / 2, red[0].size(), lv[0].size(), mlp_pre(mlp_slots(R)), mlp_slots(R));
    for (int i = 0; i < MLP_PH_RANK; ++i)
      std::fprintf(stderr, "mlp phases: %-14s reducers min %7.2f p50 %7.2f max %7.2f | leavers min %7.2f p50 %7.2f max %7.2f\n",
                   names[i], stat(red[i], 0), stat(red[i], 0.5), stat(red[i], 1.0), stat(lv[i], 0), stat(lv[i], 0.5),
                   stat(lv[i], 1.0));
    for (int i = 0; i < MLP_NST; ++i) {
      const auto& rq = all[MLP_PH_STAGE + i];
      const auto& tk = all[MLP_PH_STAGE + MLP_NST + i];
      std::fprintf(stderr, "mlp stages: %-3s %2d requested p50 %7.2f max %7.2f | taken min %7.2f p50 %7.2f max %7.2f\n",
                   i < MLP_GU_ST ? "g/u" : "dn", i, stat(rq, 0.5), stat(rq, 1.0), stat(tk, 0), stat(tk, 0.5),
                   stat(tk, 1.0));
    }
    qkv_phase_report(ph, prev_end, nred);
  }
  // The next layer's qkv blocks (one-round kernel, stamped when its grid fits qkv_ph), same time origin, grouped by
  // what shared their SM: an MLP reducer (its block can start only once that reducer ends, if it is the SM's second
  // qkv block), an MLP block that left early, or no MLP block; within each group the blocks of the first and the
  // second half of the grid (the first half is dispatched first, one block per SM beside the MLP blocks).
  void qkv_phase_report(const std::vector<unsigned long long>& mph, double origin, int nred) {
    const int nb = Gemv1QkvSm::grid_for(3 * D, nsm);
    if (nb <= 0 || nb > qkv_ph_blocks) return;
    std::vector<unsigned long long> q((size_t)nb * GEMV_PH);
    CF_CUDA(cudaMemcpy(q.data(), qkv_ph, q.size() * 8, cudaMemcpyDeviceToHost));
    std::vector<int> role(nsm + 64, 0);  // per SM: 0 no MLP block, 1 leaver, 2 reducer
    for (int b = 0; b < MLP_NB; ++b) {
      const unsigned long long* t = &mph[(size_t)b * MLP_PH];
      const size_t sm = (size_t)t[MLP_PH_SM];
      if (sm < role.size()) role[sm] = (int)t[MLP_PH_RANK] >= MLP_NB - nred ? 2 : 1;
    }
    static const char* rn[3] = {"no MLP", "leaver", "reducer"};
    static const char* pn[GEMV_PH_SM] = {"entry", "wait", "staged", "MMAs done", "end"};
    std::fprintf(stderr, "qkv phases (layer %d, %d blocks, us relative to the previous MLP's last block end)\n",
                 L / 2 + 1, nb);
    for (int r = 0; r < 3; ++r)
      for (int half = 0; half < 2; ++half) {
        std::vector<double> v[GEMV_PH_SM];
        for (int b = half * (nb / 2); b < (half ? nb : nb / 2); ++b) {
          const unsigned long long* t = &q[(size_t)b * GEMV_PH];
          if (!t[0] || (size_t)t[GEMV_PH_SM] >= role.size() || role[t[GEMV_PH_SM]] != r) continue;
          for (int i = 0; i < GEMV_PH_SM; ++i) v[i].push_back(((double)t[i] - origin) / 1000.0);
        }
        if (v[0].empty()) continue;
        std::fprintf(stderr, "qkv phases: SM with %-7s blocks %s half (%3zu):", rn[r], half ? "2nd" : "1st",
                     v[0].size());
        for (int i = 0; i < GEMV_PH_SM; ++i) {
          std::sort(v[i].begin(), v[i].end());
          std::fprintf(stderr, " %s p50 %7.2f max %7.2f%s", pn[i], v[i][v[i].size() / 2], v[i].back(),
                       i < GEMV_PH_SM - 1 ? " |" : "\n");
        }
      }
  }

  void write_ctl(const Ctl& c) { CF_CUDA(cudaMemcpyAsync(ctl, &c, sizeof(Ctl), cudaMemcpyHostToDevice, stream)); }
  void reset_pos() { CF_CUDA(cudaMemsetAsync(&dyn->pos, 0, sizeof(int), stream)); }
  Ctl make_ctl(double guidance) const {
    Ctl c = {};
    c.P = P;
    c.cfg = cfg_on ? 1 : 0;
    c.N = N;
    c.vocab = Vs;
    c.guidance = cfg_on ? guidance : 0.0;
    c.top_p = 0.9f;
    return c;
  }
};

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

double measure_copy_bandwidth(size_t bytes, int reps) {
  void *a = nullptr, *b = nullptr;
  CF_CUDA(cudaMalloc(&a, bytes));
  if (cudaMalloc(&b, bytes) != cudaSuccess) {
    cudaFree(a);
    throw cubeforge::Error("measure_copy_bandwidth: out of device memory");
  }
  cudaMemset(a, 0x5a, bytes);
  cudaMemset(b, 0x33, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < 2; ++i) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
  cudaEventRecord(e0, 0);
  for (int i = 0; i < reps; ++i) cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0);
  cudaEventRecord(e1, 0);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  CF_CUDA(cudaGetLastError());
  return 2.0 * (double)bytes * reps / (ms * 1e-3);
}

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
    if (prop.major < 9 || !m.blocked || m.diag_l2w || m.nsm < MLP_NB || (size_t)m.smem_optin < mlp_smem(m.Rmax, 2)) {
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
    m.lm_ring_on = prop.major >= 9 && m.blocked && !m.diag_l2w && m.Vs % LMR_ROWS == 0 &&
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
