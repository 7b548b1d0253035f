// The sidebar's form (everything the user sets before pressing Generate), its JSON form for the editor's
// per-plugin settings, the translation form → JobSpec (and a job's variation → its own JobSpec), the check of the
// variation count. Also JobSpec ↔ JSON for the history. No GL/ImGui.
#pragma once
#include "worker/job.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace cubeforge::ai {

// The generated mesh's vertex colours: the colour the prompt names (none if it names none), a chosen one, or none.
enum class VertexColour { FromPrompt, Custom, None };
const char* to_string(VertexColour v);          // "prompt", "custom", "none"
VertexColour vertex_colour_from_string(const std::string& s);  // throws Error

struct FormSettings {
  std::string prompt;
  std::string negative_prompt;       // used with guidance > 0 (GenerationRequest::negative_prompt)
  std::uint64_t seed = 42;
  bool new_seed_each_run = false;    // pick a fresh seed after every generation
  float guidance = 3.0f;
  bool top_p = false;                // false: greedy
  float top_p_value = 0.9f;
  int variations = 1;                // shapes per Generate (1..kMaxFormVariations); used with top-p only
  bool use_bbox = false;             // only offered when the model takes a bounding box
  std::array<float, 3> bbox{1.f, 1.f, 1.f};
  bool aspect_lock = true;
  int resolution = 6;                // MeshOptions::resolution_base, 4..9 (6: ≤ 3 s on a 2-core CPU with the default model)
  bool adaptive_occupancy = true;
  bool face_cap_on = true;
  int face_cap = 20000;
  AttentionMode attention = AttentionMode::Reference;
  bool previews = true;
  int preview_every = 16;            // K (grown adaptively)
  int preview_resolution = 5;
  float preview_max_overhead = 0.10f;
  bool auto_place = true;            // place the result when it is done
  VertexColour vertex_colour = VertexColour::FromPrompt;  // what the generated mesh is painted with
  std::array<float, 3> colour{0.8f, 0.8f, 0.8f};           // linear RGB, with VertexColour::Custom
  bool use_default_model = true;
  std::string model_dir;             // when !use_default_model
};

// The panel offers 1..4 variations per Generate (the library takes up to kMaxVariations).
constexpr int kMaxFormVariations = 4;
// Empty when `variations` may be asked for with this sampling, else what to tell the user (out of range, or more
// than one with greedy decoding, which gives the same shape every time).
std::string check_variations(int variations, bool top_p);

nlohmann::json to_json(const FormSettings& f);
FormSettings form_from_json(const nlohmann::json& j);  // missing/invalid keys keep their defaults
// Applies the keys present in j onto f (script commands: {"prompt": ..., "seed": ..., ...}). Throws Error on a
// value of the wrong type.
void apply_json(FormSettings& f, const nlohmann::json& j);

// The job the form asks for (bbox only when use_bbox and the model takes one; variations only with top-p, where the
// panel's control is enabled; the vertex colour resolved: the prompt's colour word, the chosen colour, or none).
JobSpec make_spec(const FormSettings& f, const std::string& model_dir, bool model_takes_bbox);
// Variation v of a job as a job of its own: seed + v, one variation (what reproduces exactly that shape).
JobSpec variation_spec(const JobSpec& job, int variation);

nlohmann::json spec_to_json(const JobSpec& s);
JobSpec spec_from_json(const nlohmann::json& j);  // "variations" missing (older history files): 1

}  // namespace cubeforge::ai
