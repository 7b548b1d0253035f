// CUDA backend of the GPT stage (DualStreamRoformer decode, spec cube3d-reference.md §3-§7).
// Plain C++ header: it compiles without CUDA. The implementation (inference/src/cuda/) is built only where nvcc is
// found, and then CUBEFORGE_HAVE_CUDA=1 is defined for users of the cubeforge_cuda target: guard every call with
// #ifdef CUBEFORGE_HAVE_CUDA and fall back to the CPU path when cuda_available() says no or anything throws.
//
// Numerics (spec §3): weights and biases bf16 (RNE from fp32 at load), q/k RMSNorm weights fp32, wte fp32,
// residual streams fp32, every Linear takes bf16 input and rounds its output (+bias) to bf16, fp32 accumulation,
// logits bf16 before CFG, CFG in fp32 with gamma_i = g (N - i) / N.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cubeforge/model_config.h"

namespace cubeforge::cuda {

// True when a usable GPU is present (compute capability 9.0, the sm_90a code this build carries; a driver at
// least as new as the runtime). Otherwise false and *why (if given) says what is missing. Never throws.
bool cuda_available(std::string* why = nullptr);

// Variations of one prompt the editor's CUDA token backend decodes together (issue 7: 4 variations cost <= 1.3x one);
// its engine holds 2 rows (conditional + unconditional) per variation. Benchmarks size their engines from it.
inline constexpr int kGpuVariations = 4;

// fp32 host tensors by the reference tensor names of spec §2.1 (e.g. "transformer.dual_blocks.3.attn.pre_x.c_qk.weight"),
// with the shape the engine expects ([out, in] for Linear weights). transformer.wte.weight must already hold the
// rebuilt rows (spec §2.3). Throw (any std::exception) if a tensor is missing or has another shape.
struct GptWeightSource {
  std::function<std::vector<float>(const std::string& name, const std::vector<int64_t>& shape)> get;
};

// Single-stream block attention during cached decode (spec §4.4): Reference = attend to slot 0 only (what the
// reference does with its KV cache), Causal = attend to slots 0..i (the uncached / training behaviour).
enum class SingleBlockAttention { Reference, Causal };

struct GenerateOptions {
  float guidance = 3.0f;                 // g; used only when prefill() was given cfg = true
  std::optional<float> top_p;            // nullopt: argmax (first index on ties). Set: nucleus sampling with this
                                         // threshold (the reference ignores its value and uses 0.9: pass 0.9 to match)
  uint64_t seed = 0;                     // top-p RNG seed (counter based: seed, variation, step)
  SingleBlockAttention attention = SingleBlockAttention::Reference;
  bool use_graph = true;                 // false: eager launches (debugging), same kernels
  int steps_per_graph = 8;               // decode steps captured in one CUDA graph
  int queue_depth = 3;                   // graph launches kept in flight ahead of the host
  // Called on the calling thread as tokens arrive (in order, per step all variations): step index, variation,
  // token id, seconds since generate() started at which the step finished on the device (CUDA events bound each
  // graph chunk; its steps are spread evenly over it), so the gaps between tokens are decode steps.
  std::function<void(int index, int variation, int32_t token, double seconds)> on_token;
  const std::atomic<bool>* cancel = nullptr;  // checked between graph launches; set => throws cubeforge::Cancelled
};

struct GenerateStats {
  double step0_ms = 0;                   // BOS step (shape stream of the prefill + first token), CUDA events
  double decode_ms = 0;                  // steps 1..N-1, CUDA events
  double capture_ms = 0;                 // graph capture + instantiation done by this call (0 when cached)
  double wall_ms = 0;                    // host wall time of generate()
  int steps_per_chunk = 1;
  std::vector<float> chunk_ms;           // per launched chunk (CUDA events), ms per step in that chunk
};

struct EngineOptions {
  bool pdl = true;                       // programmatic dependent launch between decode kernels
  bool verbose = true;                   // print VRAM use at load (stderr)
  // Experiments and diagnostics, as bits (create() refuses any other bit; the alternatives measured slower in
  // sessions 3-10 were removed in session 11, docs/cuda-gpt.md says where they last were):
  //   bit 3 (8): row-major decode weights (default: the blocked 8 x 32 layout)
  //   bit 4 (16): decode GEMV activations bf16 only (default: bf16 hi + lo parts, ~16 mantissa bits)
  //   bit 5 (32): prefill GEMM activations bf16 only (default: hi + lo parts)
  //   timing diagnostics, wrong outputs: bit 18 (262144) no attention kernels, bit 19 (524288) every GEMV reads one
  //   L2-resident 2 MB range, bit 22 (4194304) the LN prologues skip the row statistics (mean 0, rstd 1);
  //   bit 21 (2097152): per-kernel timeline of one replayed step on stderr (outputs right)
  //   bit 23 (8388608): before each generate, the buffers the decode writes before it reads are filled with NaN
  //   bytes (a read of a previous run's values shows as NaN logits; outputs right otherwise)
  //   bit 24 (16777216): per (step, kernel) a hash of the kernel's outputs, fetched by diag_output_hashes(); needs a
  //   binary built with -DCF_DIAG_HASH (create() says so otherwise)
  int variant = 0;
};

// prefill()'s rows for `count` variations of one prompt from its B rows [B, s, D] (B = 2 with CFG: cond, uncond):
// each of the B rows `count` times in a row, i.e. rows [0, P) cond and [P, 2P) uncond.
inline std::vector<float> variation_rows(const std::vector<float>& rows, int B, int count) {
  const size_t row = rows.size() / size_t(B);
  std::vector<float> out;
  out.reserve(row * size_t(B) * size_t(count));
  for (int b = 0; b < B; ++b)
    for (int p = 0; p < count; ++p) out.insert(out.end(), rows.begin() + b * row, rows.begin() + (b + 1) * row);
  return out;
}

class GenericGptEngine;  // inference/src/cuda/gpt_generic.h

class CudaGptEngine {
 public:
  // Loads the weights (bf16 arena, one allocation) and allocates KV caches and scratch for up to max_batch_rows
  // rows (2 per prompt with CFG). num_tokens = N (512 v0.1 / 1024 v0.5), cond_len = s (77 / 78).
  // Widths other than the fast kernels' (n_embd 1536, 12 heads of 128, one single block, cond_len <= 128, vocab a
  // multiple of 16) run on the generic-width kernels (gpt_generic.h: any widths, fp32 activations and KV cache, same
  // API); CUBEFORGE_CUDA_GPT=generic forces them at any width (checks). uses_generic_kernels() says which.
  // Throws cubeforge::Error with a clear message (no GPU, GPU too small, missing tensor, CUDA error, a
  // configuration neither kernel set supports).
  static std::unique_ptr<CudaGptEngine> create(const GptConfig& cfg, int num_tokens, int cond_len,
                                               const GptWeightSource& weights, int max_batch_rows = 2,
                                               const EngineOptions& opts = {});
  ~CudaGptEngine();
  CudaGptEngine(const CudaGptEngine&) = delete;
  CudaGptEngine& operator=(const CudaGptEngine&) = delete;

  // cond: host fp32 [rows, cond_len, D] (already through text_proj / bbox_proj). With cfg, rows = 2P: rows [0,P) are
  // the conditional rows and [P,2P) the unconditional ones (P prompts or P variations of one prompt). Without cfg
  // rows = P. Runs the cond stream of every block (KV slots 0..s-1). Where every prompt's rows equal the first's
  // bitwise (variations of one prompt), only the first prompt's rows are computed and their slots copied to the
  // others (CUBEFORGE_GPT_PREFILL_SHARE=0: every row). Returns the device time in ms (CUDA events).
  // The cond cache stays valid: generate() may be called several times after one prefill (e.g. other seeds).
  double prefill(const float* cond, int rows, bool cfg);

  // Decodes N tokens for every variation: returns [P][N] token ids (row-major). Throws cubeforge::Cancelled when
  // options.cancel is set (the engine stays usable), cubeforge::Error on CUDA errors.
  std::vector<int32_t> generate(const GenerateOptions& options, GenerateStats* stats = nullptr);

  // Teacher forcing for tests. The k-th call after prefill() (k = 0, 1, ...) runs decode step k and returns the raw
  // logits (bf16 values as float) [rows][shape_model_vocab_size]; then feeds feed[p] (one token per variation) as the
  // token of step k. guidance sets gamma for the on-device CFG (its argmax is returned in *argmax if given).
  std::vector<float> step_logits(const std::vector<int32_t>& feed, float guidance, SingleBlockAttention mode,
                                 bool use_graph, std::vector<int32_t>* argmax = nullptr);

  size_t vram_bytes() const;             // everything this engine allocated on the device
  size_t weight_bytes() const;           // the bf16 weight arena (+ fp32 wte)
  // Bytes one decode step must read (weights touched + mean valid KV prefix), for bandwidth reports.
  double decode_bytes_per_step(int rows, SingleBlockAttention mode) const;
  int rows() const;                      // rows of the last prefill
  int num_tokens() const;
  int cond_len() const;
  std::string device_name() const;
  bool uses_generic_kernels() const;     // true: the generic-width path (small models), false: the fast kernels
  // Diagnostics (variant bit 24): the last generate's output hashes [num_tokens][128][8] (position, kernel of the
  // step, word: 0 the kernel's outputs, 1.. stages inside it) and the kernels' names; empty when off.
  std::vector<unsigned> diag_output_hashes(std::vector<std::string>* kernel_names = nullptr) const;

 private:
  CudaGptEngine();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<GenericGptEngine> generic_;  // set when the generic-width path serves this engine
};

// Device-to-device copy bandwidth (bytes read + written per second), measured with CUDA events.
double measure_copy_bandwidth(size_t bytes = size_t(1) << 31, int reps = 10);

namespace testing {
// A plain fp32 GPU implementation of the full (uncached) forward, for correctness tests only: cuBLAS SGEMM without
// TF32, naive attention with the exact joint mask, no KV cache. Not tuned, not used by the engine.
class Fp32Reference {
 public:
  Fp32Reference(const GptConfig& cfg, int num_tokens, int cond_len, const GptWeightSource& weights);
  ~Fp32Reference();
  // Rounds every stored weight and bias to bf16 (RNE) in place: isolates the activation rounding of the engine.
  void round_weights_to_bf16();
  // Teacher-forced forward of T shape positions: position 0 = BOS, position j = wte[tokens[p][j-1]].
  // tokens: [P][T] (only the first T-1 of each row are used). Returns logits [rows][T][shape_model_vocab_size].
  std::vector<float> forward(const float* cond, int rows, bool cfg, const std::vector<int32_t>& tokens, int T,
                             SingleBlockAttention mode);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
}  // namespace testing

}  // namespace cubeforge::cuda
