// Public generation API: load a model (reference layout or the default model), then prompt → shape tokens
// (streamed through a per-token callback) → mesh. Requests are validated up front with clear errors;
// cancellation is honoured within one token step; timing statistics come back with every result.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cubeforge/cancel.h"
#include "cubeforge/mesh.h"
#include "cubeforge/model_config.h"

namespace cubeforge {

// Single-stream block attention during KV-cached decode (spec §4.4).
enum class AttentionMode {
  Reference,  // attends to slot 0 only, as the published pipeline does (default: outputs match the reference)
  Causal,     // true causal attention over the prefix (what the uncached reference path computes)
};
const char* to_string(AttentionMode m);
AttentionMode attention_mode_from_string(const std::string& s);

// Where a model's files are. ModelFiles::from_directory() resolves the documented directory layout (README).
struct ModelFiles {
  std::string config;           // reference YAML config or golden JSON config
  std::string gpt;              // shape_gpt.safetensors
  std::string shape;            // shape_tokenizer.safetensors
  std::string clip_dir;         // Hugging Face CLIP text directory (config.json, model.safetensors, vocab, merges)
  std::string clip_weights;     // overrides clip_dir/model.safetensors when set
  std::string vocab, merges;    // override clip_dir/{vocab.json,merges.txt} when set
  std::string known_words;      // optional: words of the training captions (default model), one per line

  static ModelFiles from_directory(const std::string& dir, const std::string& clip_dir_override = "");
  // A golden case of ../shared/golden/cube3d: prefix = DIR/NAME (NAME_config.json, NAME_{gpt,shape,clip}.safetensors).
  // Such a model has no tokenizer: it runs pre-tokenized inputs and tokens → mesh.
  static ModelFiles from_golden_case(const std::string& prefix);
};

struct GenerationRequest {
  std::string prompt;
  // Negative prompt: with guidance, the unconditional branch encodes this text instead of the empty string, so the
  // guided logits (1 + γ)·cond − γ·uncond steer away from it. Empty (or blank): the reference's empty-string branch.
  std::string negative_prompt;
  uint64_t seed = 0;
  float guidance = 3.0f;                 // 0 disables classifier-free guidance
  std::optional<float> top_p;            // nullopt: greedy (argmax); else nucleus sampling with this p in (0, 1]
  std::optional<std::array<float, 3>> bbox;  // v0.5 models only: x, y, z sizes (raw, as the reference API)
  bool normalize_bbox = true;            // scale so the longest side is 1.925, as the reference CLI does
  AttentionMode attention = AttentionMode::Reference;
  // Variations of one prompt (Cube3D::generate_variations): variation v samples with seed + v, so each one is also
  // the single generation of that seed. More than one needs top_p (greedy decoding gives the same shape every time).
  // A GPU backend decodes them together as one batch (4 cost ~1.2-1.3x the time of one); the CPU runs them in turn.
  int variations = 1;
};

constexpr int kMaxVariations = 8;

// The seed variation v of a request samples with: generating that seed alone gives exactly variation v's shape.
// (The CUDA top-p kernels apply the same rule on the device, gpt_topp.cuh / gpt_generic_kernels.cuh.)
constexpr uint64_t variation_seed(uint64_t seed, int v) { return seed + uint64_t(v); }

struct TokenEvent {
  int index;          // 0-based token index
  int id;             // shape token id
  double elapsed_ms;  // since the start of generate()
  int variation = 0;  // which variation (generate_variations); 0 for a single generation
};

enum class OccupancyMode { Dense, Adaptive };
const char* to_string(OccupancyMode m);
OccupancyMode occupancy_mode_from_string(const std::string& s);

// Tokens → mesh settings (spec §8.5 grid; clean-up of the tokens-to-mesh issue).
struct MeshOptions {
  int resolution_base = 6;                    // 4..9: (2^rb + 1)^3 grid points in [-1.05, 1.05]^3
  OccupancyMode mode = OccupancyMode::Adaptive;
  bool remove_small_components = true;       // drop components whose bbox diagonal < 15% of the mesh's
  bool base_pivot = false;                    // centre x/z, lowest point at y = 0 (for placing in a scene)
  bool normals = true;                        // smooth vertex normals (off: the caller computes them, e.g. after
                                              // decimating, which would recompute them anyway)
  int coarse_resolution_base = 5;             // adaptive: level evaluated in full
  // Adaptive refinement rule. Default: margin 3 logits at the coarse level, halving per level, no dilation into the
  // last level: on the default model's outputs (8 prompts, rb 6 and 7; `cubeforge-gen adaptive-study`) it gave
  // the dense mesh's exact vertex set in 16/16 cases with fewer points than the former fixed margin 1 + dilation
  // 1 rule, which missed thin chair parts (6060 of 6224 vertices at rb 6).
  float adaptive_margin = 3.0f;               // adaptive: refine cells with a corner |logit| below this
  bool adaptive_scale_margin = true;          // adaptive: margin halves per level (grid.h AdaptiveOptions::scale_margin)
  int adaptive_final_dilation = 0;            // adaptive: dilation into the last level, -1 = 1 (grid.h final_dilation)
};

// Live preview while tokens arrive: every `every` tokens the first k tokens are decoded at a low resolution.
struct PreviewOptions {
  int every = 0;               // 0 disables previews
  bool adaptive = true;        // grow the interval so previews cost at most max_overhead of the decode time
  float max_overhead = 0.10f;
  int resolution_base = 5;
};

// Tokens until the next live preview after one that took preview_ms, at mean_step_ms of decode per token so far:
// `every`, grown (adaptive) to preview_ms / (max_overhead x mean_step_ms); `interval` (the current one) when there is
// no step time yet. Cube3D::generate's rule; the GPU bench times the decode under it (bench-shape-gpu --e2e).
inline int next_preview_interval(const PreviewOptions& p, int interval, double preview_ms, double mean_step_ms) {
  if (!p.adaptive) return interval;
  const int need = mean_step_ms > 0 ? int(std::ceil(preview_ms / (p.max_overhead * mean_step_ms))) : interval;
  return std::max(p.every, need);
}

struct GenerationStats {
  double text_ms = 0;       // tokenizer + CLIP + projection
  double prefill_ms = 0;
  double ttft_ms = 0;       // request start → first token
  double gpt_ms = 0;        // prefill + all decode steps
  std::vector<double> token_ms;  // time of every token since the start
  bool prompt_truncated = false;
  bool negative_prompt_truncated = false;
  std::vector<std::string> unknown_words;  // prompt words not in the model's known-word list (when it ships one)
  std::string backend = "cpu";
  std::string shape_backend = "cpu";  // tokens → mesh: "cuda (...)", "cpu", or "cpu (GPU failed: ...)"
  std::string text_backend = "cpu";   // CLIP of the prompt: "cuda (...)", "cpu", or "cpu (GPU failed: ...)"
  // Shape stage (tokens → mesh).
  double latent_ms = 0, occupancy_ms = 0, meshing_ms = 0, cleanup_ms = 0;
  size_t points_evaluated = 0, points_dense = 0;
  // Previews.
  double first_preview_ms = 0;  // request start → first preview mesh delivered
  int previews = 0;
  double preview_ms_total = 0;  // time spent building previews (inside the token loop on the CPU)
  double total_ms = 0;

  // The gaps between consecutive token times (ms): the samples of TPOT percentiles.
  std::vector<double> token_gaps_ms() const {
    std::vector<double> g;
    for (size_t i = 1; i < token_ms.size(); ++i) g.push_back(token_ms[i] - token_ms[i - 1]);
    return g;
  }
};

// Validates a request against a model configuration; throws cubeforge::Error with a user-facing message.
void validate_request(const GenerationRequest& req, const ModelConfig& cfg);

}  // namespace cubeforge
