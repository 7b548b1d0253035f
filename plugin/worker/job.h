// Job types of the AI worker: what a job asks for (JobSpec), the states it moves through, and what it hands back
// (progress snapshots, previews, the finished meshes with their statistics: one per variation of the prompt, see
// GenerationRequest::variations). Plain data: no GL, no ImGui, no editor.
//
// State machine (one job):  Queued → Loading → Generating → Meshing → Done
//                               \         \          \           \→ Cancelled | Failed
// Every non-terminal state can go to Cancelled (stop flag) or Failed (any exception); terminal states are final.
#pragma once
#include <cubeforge/generation.h>
#include <cubeforge/mesh.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cubeforge::ai {

using JobId = std::uint64_t;

enum class JobState { Queued, Loading, Generating, Meshing, Done, Cancelled, Failed };
const char* to_string(JobState s);
inline bool is_terminal(JobState s) { return s == JobState::Done || s == JobState::Cancelled || s == JobState::Failed; }

// Everything one generation needs. model_dir names the model the job runs on; the worker (re)loads it when another
// model (or none) is loaded. request.variations > 1 asks for that many shapes of the prompt in one job (variation v
// samples with request.seed + v).
struct JobSpec {
  std::string model_dir;
  GenerationRequest request;
  MeshOptions mesh;              // the worker forces base_pivot (base-centred, Y up) for placement
  PreviewOptions preview;
  std::size_t face_cap = 0;      // 0: no decimation
  std::string tag;               // free text carried to the result (batch runs, history actions)
  std::optional<int> nice;       // CPU priority of the inference threads for this job (default: WorkerOptions::nice)
  std::optional<std::array<float, 3>> vertex_colour;  // painted on every output (linear RGB); none: no vertex colours
};

// Latest progress of the running job; the worker overwrites it (the UI reads the newest once per frame).
struct JobProgress {
  JobId job = 0;
  JobState state = JobState::Queued;
  std::string stage;             // "model: GPT", "text", "gpt", "latents", "occupancy", "meshing", "cleanup", "decimate"
  float load_fraction = 0.f;     // while Loading
  int tokens_done = 0;           // over every variation
  int tokens_total = 0;          // tokens per shape x variations
  int variations = 1;            // of the job
  int variation = 0;             // the variation decoding (Generating) or being meshed (Meshing) last
  int variations_decoding = 0;   // variations started and not finished: > 1 when a GPU decodes them as one batch
  double elapsed_ms = 0;         // since the worker started the job
  double tokens_per_s = 0;       // decode rate so far
  double eta_ms = -1;            // < 0: unknown
};

struct PreviewUpdate {
  JobId job = 0;
  int tokens_done = 0;
  double at_ms = 0;              // since the job started
  std::shared_ptr<const Mesh> mesh;
};

// A small RGBA8 image (history thumbnails), rows top to bottom.
struct RgbaImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgba;
};

// One finished shape, ready to place: base-centred (x/z centre, lowest point at y = 0), Y up, scaled to fit the
// requested bounding box when one was given, decimated to the face cap. A job makes one per variation.
struct JobOutput {
  int variation = 0;             // 0..variations-1
  std::uint64_t seed = 0;        // request.seed + variation: generating this seed alone gives exactly this shape
  std::shared_ptr<const Mesh> mesh;
  std::vector<int> tokens;
  GenerationStats stats;
  double queue_ms = 0;           // submit → worker pickup (the job's, in every output)
  double load_ms = 0;            // model load done inside this job (0 when already loaded)
  double decimate_ms = 0;        // this output's decimation, centring and fit
  std::size_t faces_before_cap = 0;
  float fit_scale = 1.f;         // applied to fit the bbox
  double wall_ms = 0;            // worker pickup → every variation done (the job's)
  // Filled by WorkerOptions::finish (on the worker thread) when set: the persisted copy of the result.
  std::string saved_id;
  std::string save_error;
  std::shared_ptr<const RgbaImage> thumbnail;
};

// A state change. Terminal events carry the outcome (outputs for Done, message for Failed/Cancelled).
struct JobEvent {
  JobId job = 0;
  JobState state = JobState::Queued;
  std::string message;
  std::shared_ptr<const JobSpec> spec;
  std::shared_ptr<const JobOutput> output;                // Done: variation 0 (outputs[0])
  std::vector<std::shared_ptr<const JobOutput>> outputs;  // Done: every variation, in order
  // Partial statistics of a cancelled/failed job (tokens produced over every variation, time to first token...).
  std::shared_ptr<const GenerationStats> partial;
  // Cancelled: tokens the backend delivered after the cancel was requested (the step in flight; the CPU backend
  // checks before every step, so at most one there).
  int tokens_after_cancel = 0;
};

}  // namespace cubeforge::ai
