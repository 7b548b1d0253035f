// The model seam of the worker: a ModelBackend loads a model directory into a LoadedModel, which runs one
// generation (one shape per variation of the request) at a time on the worker thread. The real one wraps cubeforge::Cube3D (cube3d_backend.h); tests plug
// in fakes with scripted delays and injected failures. ModelInfo is immutable and shared with the UI thread.
#pragma once
#include "worker/job.h"

#include <cubeforge/cancel.h>
#include <cubeforge/cube3d.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace cubeforge {
class ClipTokenizer;
}

namespace cubeforge::ai {

// What the UI may know about the loaded model. Safe to read from any thread (never mutated after load).
struct ModelInfo {
  std::string dir;
  std::string name;                  // directory name, or "default model"
  std::string backend = "CPU";       // shown in the panel ("CPU (fp32, 8 threads)", "cuda (NVIDIA H200)")
  std::string backend_note;          // why this backend (e.g. "no CUDA in this build")
  int num_tokens = 0;                // shape tokens per generation
  bool use_bbox = false;             // v0.5 layout: takes a bounding box
  std::vector<std::string> known_words;  // sorted; empty when the model ships no vocabulary list
  std::unordered_set<std::string> known_set;
  std::shared_ptr<const ClipTokenizer> tokenizer;  // thread-safe encode(); null when unavailable
};

// Result of checking a prompt against a model before (or while) typing. UI thread; cheap.
struct PromptCheck {
  bool empty = true;
  int tokens = 0;                    // BPE tokens of the prompt content (limit: 75 + BOS/EOS = 77)
  bool truncated = false;
  std::vector<std::string> unknown_words;
};
PromptCheck check_prompt(const ModelInfo* info, const std::string& prompt);

using LoadProgress = std::function<void(float fraction, const std::string& stage)>;

class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual std::shared_ptr<const ModelInfo> info() const = 0;
  // Runs prompt → tokens → mesh on the calling (worker) thread: spec.request.variations shapes, returned in order
  // (variation v sampled with request.seed + v; on_token reports TokenEvent::variation). Must honour cancel within
  // one token step (throw cubeforge::Cancelled) and report stages through on_stage ("gpt", "latents", "occupancy",
  // "meshing", "cleanup"; the mesh stages once per variation, one variation after the other).
  virtual std::vector<ShapeResult> generate(const JobSpec& spec, const TokenCallback& on_token,
                                            const PreviewCallback& on_preview, const CancelToken* cancel,
                                            const StageCallback& on_stage) = 0;
};

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // Loads a model directory; throws cubeforge::Error with a user-facing message naming the file at fault, or
  // cubeforge::Cancelled when cancel is set (checked at least between load stages).
  virtual std::unique_ptr<LoadedModel> load(const std::string& dir, const LoadProgress& progress,
                                            const CancelToken* cancel) = 0;
};

}  // namespace cubeforge::ai
