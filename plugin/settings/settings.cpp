// Form settings and JobSpec JSON: see settings.h.
#include "settings/settings.h"

#include "appearance/prompt_colour.h"

#include <cubeforge/error.h>

#include <algorithm>

using nlohmann::json;

namespace cubeforge::ai {

const char* to_string(VertexColour v) {
  switch (v) {
    case VertexColour::FromPrompt: return "prompt";
    case VertexColour::Custom: return "custom";
    case VertexColour::None: return "none";
  }
  return "prompt";
}

VertexColour vertex_colour_from_string(const std::string& s) {
  if (s == "prompt") return VertexColour::FromPrompt;
  if (s == "custom") return VertexColour::Custom;
  if (s == "none") return VertexColour::None;
  throw Error("vertex_colour must be \"prompt\", \"custom\" or \"none\", got \"" + s + "\"");
}

json to_json(const FormSettings& f) {
  return json{{"prompt", f.prompt},
              {"negative_prompt", f.negative_prompt},
              {"seed", f.seed},
              {"new_seed_each_run", f.new_seed_each_run},
              {"guidance", f.guidance},
              {"top_p", f.top_p},
              {"top_p_value", f.top_p_value},
              {"variations", f.variations},
              {"use_bbox", f.use_bbox},
              {"bbox", f.bbox},
              {"aspect_lock", f.aspect_lock},
              {"resolution", f.resolution},
              {"adaptive_occupancy", f.adaptive_occupancy},
              {"face_cap_on", f.face_cap_on},
              {"face_cap", f.face_cap},
              {"attention", to_string(f.attention)},
              {"previews", f.previews},
              {"preview_every", f.preview_every},
              {"preview_resolution", f.preview_resolution},
              {"preview_max_overhead", f.preview_max_overhead},
              {"auto_place", f.auto_place},
              {"vertex_colour", to_string(f.vertex_colour)},
              {"colour", f.colour},
              {"use_default_model", f.use_default_model},
              {"model_dir", f.model_dir}};
}

namespace {
template <class T>
void take(const json& j, const char* key, T& out, bool strict) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const std::exception&) {
    if (strict) throw Error(std::string("setting '") + key + "' has the wrong type");
  }
}

// A setting stored by name ("causal", "prompt"): parse throws Error on an unknown name.
template <class T, class Parse>
void take_named(const json& j, const char* key, T& out, Parse parse, bool strict) {
  std::string name;
  take(j, key, name, strict);
  if (name.empty()) return;
  try {
    out = parse(name);
  } catch (const Error&) {
    if (strict) throw;
  }
}

void apply(FormSettings& f, const json& j, bool strict) {
  if (!j.is_object()) {
    if (strict) throw Error("settings must be a JSON object");
    return;
  }
  take(j, "prompt", f.prompt, strict);
  take(j, "negative_prompt", f.negative_prompt, strict);
  take(j, "seed", f.seed, strict);
  take(j, "new_seed_each_run", f.new_seed_each_run, strict);
  take(j, "guidance", f.guidance, strict);
  take(j, "top_p", f.top_p, strict);
  take(j, "top_p_value", f.top_p_value, strict);
  take(j, "variations", f.variations, strict);
  take(j, "use_bbox", f.use_bbox, strict);
  take(j, "bbox", f.bbox, strict);
  take(j, "aspect_lock", f.aspect_lock, strict);
  take(j, "resolution", f.resolution, strict);
  take(j, "adaptive_occupancy", f.adaptive_occupancy, strict);
  take(j, "face_cap_on", f.face_cap_on, strict);
  take(j, "face_cap", f.face_cap, strict);
  take_named(j, "attention", f.attention, attention_mode_from_string, strict);
  take(j, "previews", f.previews, strict);
  take(j, "preview_every", f.preview_every, strict);
  take(j, "preview_resolution", f.preview_resolution, strict);
  take(j, "preview_max_overhead", f.preview_max_overhead, strict);
  take(j, "auto_place", f.auto_place, strict);
  take_named(j, "vertex_colour", f.vertex_colour, vertex_colour_from_string, strict);
  take(j, "colour", f.colour, strict);
  for (float& c : f.colour) c = std::clamp(c, 0.0f, 1.0f);
  take(j, "use_default_model", f.use_default_model, strict);
  take(j, "model_dir", f.model_dir, strict);
  f.resolution = std::clamp(f.resolution, 4, 9);
  f.preview_resolution = std::clamp(f.preview_resolution, 4, 9);
  f.preview_every = std::clamp(f.preview_every, 1, 4096);
  f.face_cap = std::max(f.face_cap, 100);
  f.guidance = std::clamp(f.guidance, 0.0f, 30.0f);
  f.top_p_value = std::clamp(f.top_p_value, 0.01f, 1.0f);
  f.variations = std::clamp(f.variations, 1, kMaxFormVariations);
  f.preview_max_overhead = std::clamp(f.preview_max_overhead, 0.01f, 1.0f);
}
}  // namespace

FormSettings form_from_json(const json& j) {
  FormSettings f;
  apply(f, j, false);
  return f;
}

void apply_json(FormSettings& f, const json& j) { apply(f, j, true); }

JobSpec make_spec(const FormSettings& f, const std::string& model_dir, bool model_takes_bbox) {
  JobSpec s;
  s.model_dir = model_dir;
  s.request.prompt = f.prompt;
  s.request.seed = f.seed;
  s.request.guidance = f.guidance;
  if (f.guidance > 0) s.request.negative_prompt = f.negative_prompt;  // the field is off without guidance
  if (f.top_p) {
    s.request.top_p = f.top_p_value;
    s.request.variations = std::clamp(f.variations, 1, kMaxFormVariations);
  }
  if (f.use_bbox && model_takes_bbox) s.request.bbox = f.bbox;
  s.request.attention = f.attention;
  s.mesh.resolution_base = f.resolution;
  s.mesh.mode = f.adaptive_occupancy ? OccupancyMode::Adaptive : OccupancyMode::Dense;
  s.mesh.base_pivot = true;
  s.face_cap = f.face_cap_on ? std::size_t(f.face_cap) : 0;
  if (f.vertex_colour == VertexColour::Custom) {
    s.vertex_colour = f.colour;
  } else if (f.vertex_colour == VertexColour::FromPrompt) {
    if (auto c = colour_in_prompt(f.prompt)) s.vertex_colour = c->rgb;
  }
  if (f.previews) {
    s.preview.every = f.preview_every;
    s.preview.adaptive = true;
    s.preview.max_overhead = f.preview_max_overhead;
    s.preview.resolution_base = f.preview_resolution;
  } else {
    s.preview.every = 0;
  }
  return s;
}

std::string check_variations(int variations, bool top_p) {
  if (variations < 1 || variations > kMaxFormVariations)
    return "Variations must be 1 to " + std::to_string(kMaxFormVariations) + " (got " + std::to_string(variations) + ").";
  if (variations > 1 && !top_p)
    return "Variations need top-p sampling: greedy decoding gives the same shape every time. Choose Top-p "
           "(\"top_p\": true) or set variations to 1.";
  return {};
}

JobSpec variation_spec(const JobSpec& job, int variation) {
  JobSpec s = job;
  s.request.seed = variation_seed(job.request.seed, variation);
  s.request.variations = 1;
  return s;
}

json spec_to_json(const JobSpec& s) {
  json j{{"model_dir", s.model_dir},
         {"prompt", s.request.prompt},
         {"negative_prompt", s.request.negative_prompt},
         {"seed", s.request.seed},
         {"variations", s.request.variations},
         {"guidance", s.request.guidance},
         {"attention", to_string(s.request.attention)},
         {"resolution", s.mesh.resolution_base},
         {"occupancy", to_string(s.mesh.mode)},
         {"face_cap", s.face_cap},
         {"preview_every", s.preview.every},
         {"preview_resolution", s.preview.resolution_base},
         {"preview_max_overhead", s.preview.max_overhead}};
  j["top_p"] = s.request.top_p ? json(*s.request.top_p) : json(nullptr);
  j["bbox"] = s.request.bbox ? json(*s.request.bbox) : json(nullptr);
  j["vertex_colour"] = s.vertex_colour ? json(*s.vertex_colour) : json(nullptr);
  return j;
}

JobSpec spec_from_json(const json& j) {
  JobSpec s;
  if (!j.is_object()) throw Error("job settings must be a JSON object");
  s.model_dir = j.value("model_dir", "");
  s.request.prompt = j.value("prompt", "");
  s.request.negative_prompt = j.value("negative_prompt", "");
  s.request.seed = j.value("seed", std::uint64_t(0));
  s.request.variations = j.value("variations", 1);
  s.request.guidance = j.value("guidance", 3.0f);
  s.request.attention = attention_mode_from_string(j.value("attention", std::string("reference")));
  if (j.contains("top_p") && j["top_p"].is_number()) s.request.top_p = j["top_p"].get<float>();
  if (j.contains("bbox") && j["bbox"].is_array()) s.request.bbox = j["bbox"].get<std::array<float, 3>>();
  s.mesh.resolution_base = j.value("resolution", 7);
  s.mesh.mode = occupancy_mode_from_string(j.value("occupancy", std::string("adaptive")));
  s.mesh.base_pivot = true;
  s.face_cap = j.value("face_cap", std::size_t(0));
  s.preview.every = j.value("preview_every", 0);
  s.preview.resolution_base = j.value("preview_resolution", 5);
  s.preview.max_overhead = j.value("preview_max_overhead", 0.10f);
  if (j.contains("vertex_colour") && j["vertex_colour"].is_array())
    s.vertex_colour = j["vertex_colour"].get<std::array<float, 3>>();
  return s;
}

}  // namespace cubeforge::ai
