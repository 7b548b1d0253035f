// Cube3D: a loaded model (tokenizer, CLIP text tower, GPT, shape tokenizer) and the prompt → tokens generation
// on the CPU reference path. Thread-compatible: one generation at a time per instance.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "cubeforge/cancel.h"
#include "cubeforge/generation.h"
#include "cubeforge/grid.h"
#include "cubeforge/model_config.h"

namespace cubeforge {

class ClipTokenizer;
class ClipTextModel;
class DualStreamGpt;
struct GptState;

class ShapeModel;

struct TokenResult {
  std::vector<int> tokens;
  GenerationStats stats;
};

using TokenCallback = std::function<void(const TokenEvent&)>;
// A preview mesh built from the first `tokens_done` tokens (called on the generating thread).
using PreviewCallback = std::function<void(int tokens_done, const Mesh& preview)>;
// Stage changes: "text", "gpt", "latents", "occupancy", "meshing", "cleanup".
using StageCallback = std::function<void(const std::string& stage)>;

struct ShapeResult {
  std::vector<int> tokens;
  Mesh mesh;                 // empty when the field has no surface (reported, not an error)
  GenerationStats stats;
};

// An accelerated implementation of the token loop (the CUDA backend provides one). Given the conditioning
// [B, s, D] (B = 2 with guidance: cond row, uncond row) of one prompt, it decodes `count` variations of it together
// (variation v samples with req.seed + v, so count 1 with seed S + v gives variation v's tokens), returns their N
// tokens each, calls on_token in order (TokenEvent::variation in 0..count-1), polls cancel (throws Cancelled) and
// fills stats (prefill_ms, token_ms, gpt_ms), shared by the variations. Any other exception makes Cube3D fall back
// to the CPU path for the rest of the request and say so in stats.backend.
class TokenBackend {
 public:
  virtual ~TokenBackend() = default;
  virtual std::string name() const = 0;
  // The most variations one call decodes together (Cube3D asks for chunks of at most this many).
  virtual int max_variations() const { return 1; }
  virtual std::vector<std::vector<int>> generate_variations(const std::vector<float>& cond, int B,
                                                            const GenerationRequest& req, int count,
                                                            const TokenCallback& on_token, const CancelToken* cancel,
                                                            GenerationStats* stats) = 0;
};

// An accelerated shape stage (the CUDA backend provides one, cuda_shape.h): tokens → marching-cubes mesh and
// prefix → preview mesh with the CPU path's grid rules (grid.h) and marching-cubes conventions; clean-up stays in
// Cube3D. Cube3D attaches one when a CUDA token backend is set (set_token_backend) and a factory is registered;
// any exception other than Cancelled makes Cube3D run that call on the CPU path, with a message on stderr and in
// GenerationStats::shape_backend. Set CUBEFORGE_SHAPE_BACKEND=cpu to keep the shape stage on the CPU.
// The coarse-to-fine grid rule a MeshOptions asks for (used by the CPU shape stage and by GPU shape backends).
AdaptiveOptions adaptive_options(const MeshOptions& mesh, const CancelToken* cancel = nullptr);

class ShapeBackend {
 public:
  virtual ~ShapeBackend() = default;
  virtual std::string name() const = 0;
  // Fills latent_ms, occupancy_ms, meshing_ms, points_evaluated, points_dense of stats.
  virtual Mesh tokens_to_mesh(const std::vector<int>& tokens, const MeshOptions& mesh, const CancelToken* cancel,
                              GenerationStats* stats) = 0;
  // Preview latents of the first k tokens (PreviewFill::MeanCode), then grid: adaptive with `grid` when rb > 4.
  virtual Mesh preview_mesh(const std::vector<int>& prefix, int resolution_base, const AdaptiveOptions& grid,
                            const CancelToken* cancel) = 0;
};
// An accelerated CLIP text tower (the CUDA backend provides one, cuda_text.h): ids/mask [B,77] → last_hidden
// [B,77,H], the CPU ClipTextModel's computation. Attached with the GPU shape stage when a CUDA token backend is set;
// any exception makes that call run on the CPU (message on stderr, GenerationStats::text_backend). Set
// CUBEFORGE_TEXT_BACKEND=cpu to keep CLIP on the CPU.
class TextBackend {
 public:
  virtual ~TextBackend() = default;
  virtual std::string name() const = 0;
  virtual void encode(const std::vector<int64_t>& ids, const std::vector<int64_t>& mask, int B,
                      std::vector<float>& last_hidden) = 0;
};

class Cube3D;
// nullptr (with *why) when unusable; never throws.
using ShapeBackendFactory = std::unique_ptr<ShapeBackend> (*)(const Cube3D& model, std::string* why);
void register_shape_backend_factory(ShapeBackendFactory factory);
using TextBackendFactory = std::unique_ptr<TextBackend> (*)(const Cube3D& model, std::string* why);
void register_text_backend_factory(TextBackendFactory factory);

// Threads used by the CPU path (OpenMP + OpenBLAS); 0 = every core.
void set_cpu_threads(int n);

class Cube3D {
 public:
  // Loads every file of `files`; throws cubeforge::Error naming the file at fault. progress(0..1, stage) is optional.
  static std::unique_ptr<Cube3D> load(const ModelFiles& files,
                                      const std::function<void(float, const std::string&)>& progress = {});
  ~Cube3D();

  const ModelConfig& config() const { return cfg_; }
  const ModelFiles& files() const { return files_; }
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  const std::unordered_set<std::string>& known_words() const { return known_words_; }
  std::vector<std::string> unknown_words(const std::string& prompt) const;

  // Prompt → N shape tokens. on_token is called on the calling thread after every token; cancel is polled
  // before every step (throws cubeforge::Cancelled).
  TokenResult generate_tokens(const GenerationRequest& req, const TokenCallback& on_token = {},
                              const CancelToken* cancel = nullptr);

  // Prompt → req.variations token lists (variation v samples with req.seed + v): one GPU batch where the token backend
  // decodes several together, else one after the other. on_token reports every variation's tokens
  // (TokenEvent::variation). Each result's stats hold the text and GPT times of the run that produced it.
  std::vector<TokenResult> generate_token_variations(const GenerationRequest& req, const TokenCallback& on_token = {},
                                                     const CancelToken* cancel = nullptr);
  // Prompt → tokens → mesh, with optional live previews. Decimation and export are the caller's (cubeforge_meshio).
  // req.variations must be 1 (generate_variations makes several).
  ShapeResult generate(const GenerationRequest& req, const MeshOptions& mesh, const TokenCallback& on_token = {},
                       const PreviewCallback& on_preview = {}, const PreviewOptions& preview = {},
                       const CancelToken* cancel = nullptr, const StageCallback& on_stage = {});
  // Prompt → req.variations meshes (generate_token_variations, then each variation's tokens → mesh in turn; with a
  // GPU shape stage, the variations' CPU clean-ups run in parallel beside the GPU work of the next ones). Previews follow the first
  // variation still decoding (all of them decode together on a GPU batch: variation 0). on_stage reports each
  // variation's stages in order ("latents" ... "cleanup"), from the calling thread.
  std::vector<ShapeResult> generate_variations(const GenerationRequest& req, const MeshOptions& mesh,
                                               const TokenCallback& on_token = {}, const PreviewCallback& on_preview = {},
                                               const PreviewOptions& preview = {}, const CancelToken* cancel = nullptr,
                                               const StageCallback& on_stage = {});
  // Tokens → mesh (validates ids and count). Fills the shape-stage fields of stats when given.
  Mesh tokens_to_mesh(const std::vector<int>& tokens, const MeshOptions& mesh, const CancelToken* cancel = nullptr,
                      GenerationStats* stats = nullptr, const StageCallback& on_stage = {}) const;
  // First k tokens → coarse preview mesh.
  Mesh preview_mesh(const std::vector<int>& prefix, int resolution_base, const CancelToken* cancel = nullptr) const;
  const ShapeModel& shape_model() const { return *shape_; }
  // Pays the attached backends' one-time costs (GPU context and libraries, lazy kernel loading, CUDA graph capture,
  // the cached unconditional text row) before the first prompt: a greedy generation stopped after two tokens and a
  // coarse preview of them, both thrown away. Later generations are unchanged. Returns its wall time in ms;
  // honours cancel (throws Cancelled). No tokenizer: nothing to warm, returns 0.
  double warm_up(const CancelToken* cancel = nullptr);
  // Routes the token loop through an accelerated backend (nullptr: back to the CPU reference path).
  void set_token_backend(std::unique_ptr<TokenBackend> backend);
  std::string backend_name() const;
  // The shape stage's backend (set_token_backend attaches the GPU one when it can): nullptr = CPU.
  void set_shape_backend(std::unique_ptr<ShapeBackend> backend);
  std::string shape_backend_name() const;
  // CLIP's backend (set_token_backend attaches the GPU one when it can): nullptr = CPU.
  void set_text_backend(std::unique_ptr<TextBackend> backend);
  std::string text_backend_name() const;
  const ClipTextModel& clip_model() const { return *clip_; }

  // Lower level, used by the golden runner and tests.
  // CLIP on pre-tokenized rows: ids/mask [B,77] → last_hidden [B,77,H] (text_embeds [B,P] when non-null: CPU only).
  // Runs on the text backend when one is attached (and no text_embeds are asked for); *used (optional) names the
  // backend that ran it: "cuda (...)", "cpu" or "cpu (GPU failed: ...)".
  void encode_text(const std::vector<int64_t>& ids, const std::vector<int64_t>& mask, int B, std::vector<float>& last_hidden,
                   std::vector<float>* text_embeds = nullptr, std::string* used = nullptr) const;
  // cond [B, s, D] from last_hidden [B,77,H]; bbox [B,3] or empty (zeros).
  std::vector<float> make_cond(const std::vector<float>& last_hidden, const std::vector<float>& bbox, int B) const;
  // Token loop on a prepared cond. teacher (optional): force these ids instead of choosing (logits still reported).
  // step_logits (optional): per step, the B rows of sliced logits followed by the guided logits.
  std::vector<int> run_gpt(const std::vector<float>& cond, int B, float guidance, std::optional<float> top_p, uint64_t seed,
                           AttentionMode mode, const std::vector<int>* teacher, std::vector<std::vector<float>>* step_logits,
                           const TokenCallback& on_token, const CancelToken* cancel, GenerationStats* stats) const;
  const DualStreamGpt& gpt() const { return *gpt_; }
  std::vector<float> bos_embedding() const;

 private:
  Cube3D() = default;
  // tokens_to_mesh in two halves: the surface (GPU shape stage, or the CPU one; fills stats' shape-stage fields) and
  // its clean-up (CPU only, touches nothing but mesh and st: safe on another thread).
  Mesh surface_mesh(const std::vector<int>& tokens, const MeshOptions& mesh, const CancelToken* cancel,
                    GenerationStats& st, const StageCallback& on_stage) const;
  static void clean_surface(Mesh& mesh, const MeshOptions& opt, GenerationStats& st);
  // The request's text stage: CLIP of the prompt (and of the unconditional branch's text, cached) → cond [B, s, D];
  // fills the prompt checks and text_backend of stats.
  std::vector<float> encode_request(const GenerationRequest& req, GenerationStats& stats);
  ModelConfig cfg_;
  ModelFiles files_;
  std::unique_ptr<ClipTokenizer> tokenizer_;
  std::unique_ptr<ClipTextModel> clip_;
  std::unique_ptr<DualStreamGpt> gpt_;
  std::unique_ptr<ShapeModel> shape_;
  std::unique_ptr<GptState> state_;
  std::unique_ptr<TokenBackend> backend_;
  std::unique_ptr<ShapeBackend> shape_backend_;
  std::unique_ptr<TextBackend> text_backend_;
  // CLIP states of the unconditional branch's text (the empty string, or the negative prompt in its place), kept
  // until that text changes: a user iterating on the prompt keeps the branch, so it is encoded once
  std::string uncond_text_;
  std::vector<float> uncond_hidden_;
  bool uncond_truncated_ = false;
  std::unordered_set<std::string> known_words_;
};

#ifdef CUBEFORGE_HAVE_CUDA
// CUDA builds (users of cubeforge_cuda): the GPU shape stage and text tower register themselves (src/cuda/).
std::unique_ptr<ShapeBackend> make_cuda_shape_backend(const Cube3D& model, std::string* why);
namespace detail {
inline const bool cuda_shape_backend_registered = (register_shape_backend_factory(&make_cuda_shape_backend), true);
}
std::unique_ptr<TextBackend> make_cuda_text_backend(const Cube3D& model, std::string* why);
namespace detail {
inline const bool cuda_text_backend_registered = (register_text_backend_factory(&make_cuda_text_backend), true);
}
#endif

}  // namespace cubeforge
