// The AI sidebar panel: see panel.h.
#include "ui/panel.h"

#include <cubeforge/error.h>
#include <cubeforge/mesh_io.h>

#include <imgui.h>
#include <imgui_internal.h>  // FindWindowByName: the viewport rect for drops from the history
#include <imgui_stdlib.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;
using nlohmann::json;

namespace cubeforge::ai {

namespace {
const ImVec4 kErr(1.0f, 0.45f, 0.40f, 1.f), kWarn(1.0f, 0.80f, 0.35f, 1.f), kOk(0.45f, 0.85f, 0.50f, 1.f),
    kDim(0.60f, 0.62f, 0.66f, 1.f);
constexpr const char* kHistPayload = "CF_AI_HISTORY";

void help_marker(const char* text) {
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 24.f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

std::string ms_text(double ms) {
  char b[32];
  if (ms <= 0) return "-";
  if (ms < 1000)
    std::snprintf(b, sizeof b, "%.1f ms", ms);
  else
    std::snprintf(b, sizeof b, "%.2f s", ms / 1000.0);
  return b;
}

bool key_pressed(ImGuiKey k) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(k), false); }

// "variation 2/4" while the CPU decodes (or meshes) them one after the other, "4 variations" while a GPU batch
// decodes them together or all are decimated at once ("v2/4" / "x4" in the short form); empty for a single shape.
std::string variations_label(const JobProgress& p, bool short_form = false) {
  if (p.variations <= 1) return {};
  char b[48];
  if ((p.state == JobState::Generating && p.variations_decoding > 1) || p.stage == "decimate")
    std::snprintf(b, sizeof b, short_form ? "x%d" : "%d variations", p.variations);
  else
    std::snprintf(b, sizeof b, short_form ? "v%d/%d" : "variation %d/%d", p.variation + 1, p.variations);
  return b;
}

// Labels from the most to the least detailed, in fixed buffers (no allocation per frame); first_fitting() picks the
// first that fits the width left on this line (else the last): a progress bar's label must not run past the
// sidebar's edges, whatever the sidebar's width.
struct LabelChoices {
  char text[4][160];
  int n = 0;
  char* next() { return text[n++]; }
  const char* first_fitting() const {
    const float room = ImGui::GetContentRegionAvail().x - 2.f * ImGui::GetStyle().FramePadding.x;
    for (int i = 0; i + 1 < n; ++i)
      if (ImGui::CalcTextSize(text[i]).x <= room) return text[i];
    return n > 0 ? text[n - 1] : "";
  }
};

// The variation count: off (shown as 1) with greedy decoding, which makes the same shape every time.
bool variations_control(FormSettings& f) {
  ImGui::BeginDisabled(!f.top_p);
  const bool changed = ImGui::SliderInt("Variations", &f.variations, 1, kMaxFormVariations, f.top_p ? "%d" : "1 (greedy)",
                                        ImGuiSliderFlags_AlwaysClamp);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 24.f);
    ImGui::TextUnformatted(f.top_p ? "Shapes per Generate, each from its own seed (seed, seed + 1, ...). A GPU decodes "
                                     "them together (4 cost about 1.25x one); the CPU one after the other. The first "
                                     "is placed; every one goes to the history, where you pick the one you like."
                                   : "Needs Top-p: greedy decoding gives the same shape every time.");
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
  ImGui::EndDisabled();
  return changed;
}
}  // namespace

// ---------------------------------------------------------------------------------------------------------------
void Panel::draw() {
  const bool busy = c_.busy();
  // Esc cancels a running generation (or leaves pick mode).
  if (key_pressed(ImGuiKey_Escape)) {
    if (c_.picking())
      c_.disarm_pick();
    else if (busy)
      c_.cancel();
  }
  model_section();
  ImGui::Separator();
  prompt_section();
  run_section();
  messages_section();
  if (settings_open_next_) {
    ImGui::SetNextItemOpen(*settings_open_next_);
    settings_open_next_.reset();
  }
  if (ImGui::CollapsingHeader("Settings", ImGuiTreeNodeFlags_DefaultOpen)) {
    settings_section(busy);
    spot_section(busy);
  }
  latency_section();
  history_section();
  history_drop();
}

void Panel::model_section() {
  const ModelStatus& m = c_.model();
  FormSettings& f = c_.form();
  if (!model_dir_init_) {
    model_dir_edit_ = f.model_dir;
    model_dir_init_ = true;
  }
  ImGui::BeginDisabled(c_.busy());
  const char* items[] = {"Default model", "Model directory..."};
  int sel = f.use_default_model ? 0 : 1;
  ImGui::SetNextItemWidth(-FLT_MIN);
  if (ImGui::Combo("##model", &sel, items, 2)) {
    if (sel == 0 && !f.use_default_model) c_.select_model(true);
    if (sel == 1 && f.use_default_model) {
      f.use_default_model = false;
      c_.form_changed();
    }
  }
  if (!f.use_default_model) {
    ImGui::SetNextItemWidth(-60.f);
    const bool enter = ImGui::InputTextWithHint("##modeldir", "/path/to/model (config.yaml, *.safetensors, clip/)",
                                                &model_dir_edit_, ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    if (ImGui::Button("Load##dir") || enter) c_.select_model(false, model_dir_edit_);
  }
  ImGui::EndDisabled();

  switch (m.state) {
    case ModelStatus::State::Ready: {
      const ModelInfo* i = m.info.get();
      ImGui::TextColored(kOk, "Ready");
      ImGui::SameLine();
      ImGui::TextWrapped("%s - %s, %d tokens%s", i ? i->name.c_str() : "?", i ? i->backend.c_str() : "?",
                         i ? i->num_tokens : 0, i && i->use_bbox ? ", bounding box" : "");
      if (i && !i->backend_note.empty()) help_marker(i->backend_note.c_str());
      break;
    }
    case ModelStatus::State::Loading: {
      char overlay[96];
      std::snprintf(overlay, sizeof overlay, "Loading model: %s %.0f%%", m.stage.c_str(), double(m.fraction * 100.f));
      ImGui::ProgressBar(m.fraction, ImVec2(-FLT_MIN, 0), overlay);
      break;
    }
    case ModelStatus::State::Failed:
      ImGui::PushStyleColor(ImGuiCol_Text, kErr);
      ImGui::TextWrapped("Model not loaded: %s", m.error.c_str());
      ImGui::PopStyleColor();
      if (ImGui::SmallButton("Reload")) c_.select_model(f.use_default_model, f.model_dir);
      if (f.use_default_model) {
        ImGui::SameLine();
        ImGui::TextDisabled("or set CUBEFORGE_MODEL_DIR");
      }
      break;
    case ModelStatus::State::None:
      ImGui::TextDisabled("No model loaded%s", m.stage.empty() ? "" : (" (" + m.stage + ")").c_str());
      break;
  }
}

void Panel::prompt_section() {
  FormSettings& f = c_.form();
  const bool busy = c_.busy();
  ImGui::TextUnformatted("Prompt");
  help_marker("Describe one object, e.g. \"a wooden chair with armrests\". Ctrl+Enter generates.");
  if (focus_prompt_) {
    ImGui::SetKeyboardFocusHere();
    focus_prompt_ = false;
    if (type_phase_ == 1) type_phase_ = 2;
  }
  ImGui::BeginDisabled(busy);
  const float h = ImGui::GetTextLineHeight() * 3.6f;
  const bool submit = ImGui::InputTextMultiline("##prompt", &f.prompt, ImVec2(-FLT_MIN, h),
                                                ImGuiInputTextFlags_EnterReturnsTrue);
  prompt_active_ = ImGui::IsItemActive();
  if (ImGui::IsItemEdited()) c_.form_changed();
  ImGui::EndDisabled();
  if (submit && !busy) c_.generate();

  const PromptCheck& pc = c_.prompt_check();
  if (c_.model_info() && c_.model_info()->tokenizer && !pc.empty) {
    ImGui::TextColored(pc.truncated ? kWarn : kDim, "%d/75 tokens%s", pc.tokens,
                       pc.truncated ? ": too long, the end will be cut off" : "");
  } else {
    ImGui::TextColored(kDim, "Ctrl+Enter to generate");
  }
  if (!pc.unknown_words.empty()) {
    std::string unknown;
    for (const auto& w : pc.unknown_words) unknown += (unknown.empty() ? "" : ", ") + w;
    ImGui::PushStyleColor(ImGuiCol_Text, kWarn);
    ImGui::TextWrapped("unknown words (the model ignores them): %s", unknown.c_str());
    ImGui::PopStyleColor();
    const ModelInfo* info = c_.model_info();
    if (info && !info->known_words.empty()) {
      if (known_for_ != info) {
        known_for_ = info;
        known_joined_.clear();
        for (const auto& w : info->known_words) known_joined_ += (known_joined_.empty() ? "" : ", ") + w;
      }
      char label[96];
      std::snprintf(label, sizeof label, "%s knows these words (%zu)###known",
                    c_.form().use_default_model ? "The default model" : "This model", info->known_words.size());
      if (ImGui::TreeNode(label)) {
        ImGui::BeginChild("known_words", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * 6), true);
        ImGui::TextWrapped("%s", known_joined_.c_str());
        ImGui::EndChild();
        ImGui::TreePop();
      }
    }
  }
}

void Panel::settings_section(bool busy) {
  FormSettings& f = c_.form();
  bool changed = false;
  ImGui::BeginDisabled(busy);
  ImGui::PushItemWidth(ImGui::GetContentRegionAvail().x * 0.55f);

  changed |= ImGui::InputScalar("Seed", ImGuiDataType_U64, &f.seed);
  ImGui::SameLine();
  if (ImGui::Button("New seed")) {
    f.seed = c_.random_seed();
    changed = true;
  }
  changed |= ImGui::Checkbox("New seed after every run", &f.new_seed_each_run);

  changed |= ImGui::SliderFloat("Guidance", &f.guidance, 0.f, 10.f, "%.1f");
  help_marker("Classifier-free guidance scale. 0 disables guidance (faster: one text branch).");
  ImGui::BeginDisabled(f.guidance <= 0.f);
  changed |= ImGui::InputTextWithHint("Negative", "what it should not be", &f.negative_prompt);
  ImGui::EndDisabled();
  help_marker("Negative prompt: guidance steers away from this text instead of from an empty prompt. "
              "Needs guidance > 0.");
  if (const PromptCheck& npc = c_.negative_prompt_check(); npc.truncated || !npc.unknown_words.empty()) {
    std::string note = npc.truncated ? "too long: the end will be cut off" : "";
    if (!npc.unknown_words.empty()) {
      note += note.empty() ? "unknown words (the model ignores them): " : "; unknown words (ignored): ";
      for (std::size_t i = 0; i < npc.unknown_words.size(); ++i) note += (i ? ", " : "") + npc.unknown_words[i];
    }
    ImGui::PushStyleColor(ImGuiCol_Text, kWarn);
    ImGui::TextWrapped("%s", note.c_str());
    ImGui::PopStyleColor();
  }

  int sampling = f.top_p ? 1 : 0;
  changed |= ImGui::RadioButton("Greedy", &sampling, 0);
  ImGui::SameLine();
  changed |= ImGui::RadioButton("Top-p", &sampling, 1);
  f.top_p = sampling == 1;
  if (f.top_p) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-FLT_MIN);
    changed |= ImGui::SliderFloat("##topp", &f.top_p_value, 0.05f, 1.f, "p = %.2f");
  }
  changed |= variations_control(f);

  if (c_.model_takes_bbox()) {
    changed |= ImGui::Checkbox("Size (bounding box)", &f.use_bbox);
    if (f.use_bbox) {
      std::array<float, 3> before = f.bbox;
      ImGui::SetNextItemWidth(-FLT_MIN);
      if (ImGui::DragFloat3("##bbox", f.bbox.data(), 0.01f, kBBoxMin, kBBoxMax, "%.2f")) {
        changed = true;
        if (f.aspect_lock) {
          for (int i = 0; i < 3; ++i)
            if (f.bbox[i] != before[i] && before[i] > 0) {
              const float k = f.bbox[i] / before[i];
              for (int j = 0; j < 3; ++j)
                if (j != i) f.bbox[j] = before[j] * k;
              break;
            }
        }
      }
      changed |= ImGui::Checkbox("Lock aspect", &f.aspect_lock);
      ImGui::SameLine();
      ImGui::TextDisabled("x, y (up), z");
      const std::string why = check_bbox(f.bbox);
      if (!why.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, kErr);
        ImGui::TextWrapped("%s", why.c_str());
        ImGui::PopStyleColor();
      }
    }
  }

  changed |= ImGui::SliderInt("Resolution", &f.resolution, 4, 9);
  help_marker("Marching-cubes grid: (2^r + 1)^3 points. 6 = 65^3 (default), 7 = 129^3, 8 = 257^3 (slower, finer).");
  changed |= ImGui::Checkbox("Face cap", &f.face_cap_on);
  if (f.face_cap_on) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-FLT_MIN);
    if (ImGui::InputInt("##facecap", &f.face_cap, 1000, 10000)) {
      f.face_cap = std::clamp(f.face_cap, 100, 5000000);
      changed = true;
    }
  }

  int vc = int(f.vertex_colour);
  const char* vc_items[] = {"from the prompt", "chosen", "none"};
  if (ImGui::Combo("Colour", &vc, vc_items, 3)) {
    f.vertex_colour = VertexColour(vc);
    changed = true;
  }
  help_marker("Vertex colours painted on the result (the model makes shape only; they go into the scene and every "
              "export). 'from the prompt': its first colour word (red, blue, wooden, golden, ...), none if it has none.");
  if (f.vertex_colour == VertexColour::Custom) {
    float s[3] = {linear_to_srgb(f.colour[0]), linear_to_srgb(f.colour[1]), linear_to_srgb(f.colour[2])};
    if (ImGui::ColorEdit3("##colour", s, ImGuiColorEditFlags_NoInputs)) {
      for (int i = 0; i < 3; ++i) f.colour[i] = srgb_to_linear(s[i]);
      changed = true;
    }
  } else if (f.vertex_colour == VertexColour::FromPrompt) {
    if (f.prompt != colour_prompt_) {
      colour_prompt_ = f.prompt;
      colour_named_ = colour_in_prompt(f.prompt);
    }
    if (colour_named_) {
      const Rgb& c = colour_named_->rgb;
      ImGui::ColorButton("##named", ImVec4(linear_to_srgb(c[0]), linear_to_srgb(c[1]), linear_to_srgb(c[2]), 1.f),
                         ImGuiColorEditFlags_NoTooltip, ImVec2(ImGui::GetFrameHeight(), ImGui::GetFrameHeight()));
      ImGui::SameLine();
      ImGui::TextDisabled("%s (from the prompt)", colour_named_->word.c_str());
    } else {
      ImGui::TextDisabled("the prompt names no colour: none");
    }
  }

  if (ImGui::TreeNode("Advanced")) {
    int att = f.attention == AttentionMode::Reference ? 0 : 1;
    const char* att_items[] = {"reference", "causal"};
    if (ImGui::Combo("Attention", &att, att_items, 2)) {
      f.attention = att == 0 ? AttentionMode::Reference : AttentionMode::Causal;
      changed = true;
    }
    help_marker("Single-stream attention during cached decode: 'reference' matches the published pipeline, "
                "'causal' attends over the whole prefix.");
    int occ = f.adaptive_occupancy ? 0 : 1;
    const char* occ_items[] = {"adaptive", "dense"};
    if (ImGui::Combo("Occupancy", &occ, occ_items, 2)) {
      f.adaptive_occupancy = occ == 0;
      changed = true;
    }
    changed |= ImGui::Checkbox("Live preview", &f.previews);
    if (f.previews) {
      changed |= ImGui::SliderInt("Every K tokens", &f.preview_every, 4, 256);
      help_marker("K grows by itself so that previews never cost more than 10% of the generation time.");
      changed |= ImGui::SliderInt("Preview res.", &f.preview_resolution, 4, 7);
    }
    changed |= ImGui::Checkbox("Place when done", &f.auto_place);
    ImGui::TreePop();
  }
  ImGui::PopItemWidth();
  ImGui::EndDisabled();
  if (changed) c_.form_changed();
}

void Panel::spot_section(bool busy) {
  const Vec3 s = c_.spot();
  if (c_.picking()) {
    ImGui::TextColored(kWarn, c_.picking_history().empty() ? "Click in the viewport to choose the spot (Esc: stop)"
                                                           : "Click in the viewport to place it (Esc: stop)");
  } else {
    ImGui::Text("Lands at %.2f, %.2f, %.2f%s", double(s[0]), double(s[1]), double(s[2]),
                c_.spot_chosen() ? "" : " (view centre)");
  }
  if (ImGui::SmallButton(c_.picking() ? "Stop picking" : "Pick spot in viewport")) {
    if (c_.picking())
      c_.disarm_pick();
    else
      c_.arm_pick();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("Reset spot")) c_.set_spot({0.f, 0.f, 0.f});
  (void)busy;
}

void Panel::run_section() {
  const JobView* j = c_.current();
  if (!j) {
    if (ImGui::Button("Generate  (Ctrl+Enter)", ImVec2(-FLT_MIN, 0))) c_.generate();
    if (c_.model().state == ModelStatus::State::Loading)
      ImGui::TextColored(kDim, "The model is still loading; a job started now waits for it.");
    return;
  }
  LabelChoices label;
  constexpr size_t kLen = sizeof label.text[0];
  float frac = 0.f;
  const JobProgress& p = j->progress;
  const std::string vl = variations_label(p), vs = variations_label(p, true);
  const char* vl_gap = vl.empty() ? "" : "  ";
  const char* vs_gap = vs.empty() ? "" : " ";
  switch (j->state) {
    case JobState::Queued:
      if (c_.model().state == ModelStatus::State::Loading)
        std::snprintf(label.next(), kLen, "Waiting for the model (%.0f%%)", double(c_.model().fraction * 100.f));
      else
        std::snprintf(label.next(), kLen, "Queued");
      break;
    case JobState::Loading:
      frac = p.load_fraction;
      std::snprintf(label.next(), kLen, "Loading %s", p.stage.c_str());
      break;
    case JobState::Generating:
      frac = p.tokens_total > 0 ? float(p.tokens_done) / float(p.tokens_total) : 0.f;
      if (p.tokens_done == 0) {
        std::snprintf(label.next(), kLen, "Encoding the prompt...");
      } else if (p.eta_ms >= 0) {
        std::snprintf(label.next(), kLen, "%s%s%d/%d tokens  %.1f tok/s  ETA %.1f s", vl.c_str(), vl_gap,
                      p.tokens_done, p.tokens_total, p.tokens_per_s, p.eta_ms / 1000.0);
        std::snprintf(label.next(), kLen, "%s%s%d/%d tokens  ETA %.0f s", vl.c_str(), vl_gap, p.tokens_done,
                      p.tokens_total, p.eta_ms / 1000.0);
        std::snprintf(label.next(), kLen, "%s%s%d/%d  ETA %.0f s", vs.c_str(), vs_gap, p.tokens_done, p.tokens_total,
                      p.eta_ms / 1000.0);
        std::snprintf(label.next(), kLen, "%d/%d", p.tokens_done, p.tokens_total);
      } else {
        std::snprintf(label.next(), kLen, "%s%s%d/%d tokens", vl.c_str(), vl_gap, p.tokens_done, p.tokens_total);
        std::snprintf(label.next(), kLen, "%s%s%d/%d", vs.c_str(), vs_gap, p.tokens_done, p.tokens_total);
        std::snprintf(label.next(), kLen, "%d/%d", p.tokens_done, p.tokens_total);
      }
      break;
    case JobState::Meshing:
      frac = 1.f;
      std::snprintf(label.next(), kLen, "Meshing%s%s: %s", vl.empty() ? "" : " ", vl.c_str(), p.stage.c_str());
      std::snprintf(label.next(), kLen, "Meshing%s%s", vs.empty() ? "" : " ", vs.c_str());
      break;
    default:
      std::snprintf(label.next(), kLen, "%s", to_string(j->state));
  }
  ImGui::ProgressBar(frac, ImVec2(-FLT_MIN, 0), label.first_fitting());
  if (ImGui::Button("Cancel  (Esc)", ImVec2(-FLT_MIN, 0))) c_.cancel();
  if (p.variations > 1) {
    ImGui::PushStyleColor(ImGuiCol_Text, kDim);
    ImGui::TextWrapped("%d variations (seeds %" PRIu64 "-%" PRIu64 "): %s", p.variations,
                       j->spec ? j->spec->request.seed : 0, j->spec ? variation_seed(j->spec->request.seed, p.variations - 1) : 0,
                       j->place_when_done ? "the first is placed, all go to the history" : "all go to the history");
    ImGui::PopStyleColor();
  }
  if (j->previews_seen > 0)
    ImGui::TextColored(kDim, "Preview: %d tokens (%d updates)", j->preview_tokens, j->previews_seen);
  const std::size_t queued = c_.jobs().size() - 1;
  if (queued > 0) ImGui::TextColored(kDim, "%zu more queued", queued);
}

void Panel::messages_section() {
  for (const auto& m : c_.messages()) {
    ImGui::PushStyleColor(ImGuiCol_Text, m.level == MsgLevel::Error ? kErr : m.level == MsgLevel::Warning ? kWarn : kDim);
    ImGui::TextWrapped("%s", m.text.c_str());
    ImGui::PopStyleColor();
  }
}

void Panel::latency_section() {
  if (latency_open_next_) {
    ImGui::SetNextItemOpen(*latency_open_next_);
    latency_open_next_.reset();
  }
  if (!ImGui::CollapsingHeader("Latency", ImGuiTreeNodeFlags_DefaultOpen)) return;
  const JobView* j = c_.current();
  ImGui::TextColored(kDim, "UI frame: %.1f ms (max %.1f ms, last 2 s)", c_.frame_ms_recent(), c_.frame_ms_max_recent());
  const LatencyRecord* r = c_.last_record();
  if (j && j->state == JobState::Generating && j->progress.tokens_done > 0)
    ImGui::TextColored(kDim, "Running: %.1f tok/s, %.1f s elapsed", j->progress.tokens_per_s, j->progress.elapsed_ms / 1000.0);
  if (!r) {
    ImGui::TextDisabled("No jobs yet.");
  } else if (ImGui::BeginTable("lat", 2, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg)) {
    // labels at their full width (the longest one sets it), values wrapped in what is left of a narrow sidebar
    ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("Time to first preview").x);
    ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch);
    auto row = [](const char* k, const std::string& v) {
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextUnformatted(k);
      ImGui::TableSetColumnIndex(1);
      ImGui::TextWrapped("%s", v.c_str());
    };
    char b[96];
    if (r->variations > 1)
      std::snprintf(b, sizeof b, "#%" PRIu64 " %s (%d variations)", r->job, r->state.c_str(), r->variations);
    else
      std::snprintf(b, sizeof b, "#%" PRIu64 " %s", r->job, r->state.c_str());
    row("Job", b);
    row("Time to first token", ms_text(r->ttft_ms));
    row("Time to first preview", ms_text(r->first_preview_ms));
    std::snprintf(b, sizeof b, "%.2f / %.2f / %.2f ms", r->tpot_ms.p50, r->tpot_ms.p95, r->tpot_ms.max);
    row("TPOT p50/p95/max", b);
    std::snprintf(b, sizeof b, "%.1f tok/s (%d tokens)", r->tokens_per_s, r->tokens);
    row("Decode rate", b);
    row("GPT total", ms_text(r->gpt_ms));
    row("Shape decode", ms_text(r->decode_ms));
    row("Meshing", ms_text(r->meshing_ms));
    row("Total", ms_text(r->total_ms));
    std::snprintf(b, sizeof b, "%.1f / %.1f / %.1f ms", r->ui_frame_ms.p50, r->ui_frame_ms.p95, r->ui_frame_ms.max);
    row("UI frame p50/p95/max", b);
    std::snprintf(b, sizeof b, "%d (%s)", r->previews, ms_text(r->preview_ms).c_str());
    row("Previews", b);
    ImGui::EndTable();
  }
  ImGui::Text("Log: %zu jobs", c_.latency().records().size());
  ImGui::SameLine();
  if (ImGui::SmallButton("Export CSV")) {
    csv_path_ = c_.default_report_path(".csv");
    c_.export_latency(csv_path_, "");
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("Export JSON")) {
    json_path_ = c_.default_report_path(".json");
    c_.export_latency("", json_path_);
  }
}

void Panel::history_section() {
  HistoryStore& h = c_.history();
  char header[64];
  std::snprintf(header, sizeof header, "History (%zu)###history", h.entries().size());
  if (!ImGui::CollapsingHeader(header, ImGuiTreeNodeFlags_DefaultOpen)) return;
  if (h.entries().empty()) {
    ImGui::TextDisabled("Results appear here.");
    return;
  }
  ImGui::TextDisabled("Drag a thumbnail into the viewport to place it.");
  const bool busy = c_.busy();
  const float thumb = 64.f;
  std::string to_delete;
  // Newest first.
  const auto& es = h.entries();
  ImGuiListClipper clip;
  clip.Begin(int(es.size()), thumb + ImGui::GetStyle().ItemSpacing.y * 2 + ImGui::GetFrameHeight());
  while (clip.Step()) {
    for (int row = clip.DisplayStart; row < clip.DisplayEnd; ++row) {
      const HistoryEntry& e = es[es.size() - 1 - std::size_t(row)];
      ImGui::PushID(e.id.c_str());
      ImGui::BeginGroup();
      const unsigned texid = tex_.get(e.id, h.thumbnail(e.id));
      if (texid)
        ImGui::Image(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(texid)), ImVec2(thumb, thumb));
      else
        ImGui::Button("no\npreview", ImVec2(thumb, thumb));
      if (ImGui::BeginDragDropSource()) {
        ImGui::SetDragDropPayload(kHistPayload, e.id.c_str(), e.id.size() + 1);
        ImGui::Text("Place '%s'", short_prompt(e.prompt, 30).c_str());
        ImGui::EndDragDropSource();
      }
      ImGui::EndGroup();
      ImGui::SameLine();
      ImGui::BeginGroup();
      ImGui::PushTextWrapPos(0.f);
      ImGui::TextUnformatted(short_prompt(e.prompt, 80).c_str());
      ImGui::PopTextWrapPos();
      if (ImGui::IsItemHovered() && e.spec.is_object()) {
        const std::string neg = e.spec.value("negative_prompt", std::string());
        if (!neg.empty()) ImGui::SetTooltip("negative prompt: %s", neg.c_str());
      }
      if (e.variations > 1) {
        ImGui::TextColored(kDim, "seed %" PRIu64 ", %zu faces, v%d/%d", e.seed, e.faces, e.variation + 1, e.variations);
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("Variation %d of %d made by one Generate (seed %" PRIu64 " = the job's seed + %d).\n"
                            "Same seed remakes exactly this shape; Variation makes a new one.",
                            e.variation + 1, e.variations, e.seed, e.variation);
      } else {
        ImGui::TextColored(kDim, "seed %" PRIu64 ", %zu faces", e.seed, e.faces);
      }
      if (ImGui::SmallButton("Place")) c_.arm_pick(e.id);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Click in the viewport to place it (one undo step)");
      ImGui::SameLine();
      ImGui::BeginDisabled(busy);
      if (ImGui::SmallButton("Same seed")) c_.history_regenerate(e.id);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Regenerate with the same seed and settings (identical result)");
      ImGui::SameLine();
      if (ImGui::SmallButton("Variation")) c_.history_variation(e.id);
      ImGui::EndDisabled();
      ImGui::SameLine();
      if (ImGui::SmallButton("Export")) {
        export_id_ = e.id;
        export_path_ = c_.default_export_path(e.id);
        open_export_popup_ = true;
      }
      ImGui::SameLine();
      if (ImGui::SmallButton("Delete")) to_delete = e.id;
      ImGui::EndGroup();
      ImGui::PopID();
    }
  }
  clip.End();
  if (!to_delete.empty()) {
    tex_.drop(to_delete);
    c_.history_delete(to_delete);
  }

  if (open_export_popup_) {
    ImGui::OpenPopup("Export result");
    open_export_popup_ = false;
  }
  if (ImGui::BeginPopupModal("Export result", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    static const char* fmts[] = {".glb", ".gltf", ".obj", ".ply", ".stl", ".fbx"};
    ImGui::SetNextItemWidth(360.f);
    ImGui::InputText("Path", &export_path_);
    if (ImGui::Combo("Format", &export_format_, fmts, IM_ARRAYSIZE(fmts))) {
      fs::path p(export_path_);
      p.replace_extension(fmts[export_format_]);
      export_path_ = p.string();
    }
    if (ImGui::Button("Export", ImVec2(120, 0))) {
      c_.history_export(export_id_, export_path_);
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(120, 0)) || key_pressed(ImGuiKey_Escape)) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
}

// A history thumbnail released over the viewport: place it where the ray under the mouse hits.
void Panel::history_drop() {
  const ImGuiPayload* p = ImGui::GetDragDropPayload();
  if (!p || !p->IsDataType(kHistPayload) || !ImGui::IsMouseReleased(ImGuiMouseButton_Left)) return;
  ImGuiWindow* vp = ImGui::FindWindowByName("Viewport");
  if (!vp) return;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const ImRect r = vp->InnerRect;
  if (!r.Contains(mouse)) return;
  const std::string id(static_cast<const char*>(p->Data));
  const editor::RayHit hit = c_.host().raycast_viewport(mouse.x - r.Min.x, mouse.y - r.Min.y, true);
  if (hit.hit) c_.history_place(id, hit.point);
}

// ---------------------------------------------------------------------------------------------------------------
void Panel::before_frame() {
  if (type_phase_ == 0) return;
  if (!ImGui::GetCurrentContext()) {
    type_phase_ = 0;
    return;
  }
  ImGuiIO& io = ImGui::GetIO();
  const int enter = io.KeyMap[ImGuiKey_Enter];
  switch (type_phase_) {
    case 2:  // focus requested last frame: wait until the box is active
      if (prompt_active_) {
        io.AddInputCharactersUTF8(type_text_.c_str());
        type_phase_ = 3;
      } else if (++type_wait_ > 30) {
        type_phase_ = 0;  // could not focus (panel hidden?)
      }
      break;
    case 3:
      if (type_submit_ && enter >= 0 && enter < IM_ARRAYSIZE(io.KeysDown)) {
        io.KeyCtrl = true;
        io.KeysDown[enter] = true;
        type_phase_ = 4;
      } else {
        type_phase_ = 0;
      }
      break;
    case 4:
      io.KeysDown[enter] = false;
      io.KeyCtrl = false;
      type_phase_ = 0;
      break;
    default:
      break;
  }
}

void Panel::register_commands(editor::Host& host) {
  host.add_command("ai.ui_type", [this](const std::string& a) {
    json args = a.empty() ? json::object() : json::parse(a, nullptr, false);
    if (!args.is_object() || !args.contains("text")) throw Error("ai.ui_type needs {text, submit?}");
    if (!ImGui::GetCurrentContext()) throw Error("ai.ui_type needs the editor window (not --headless)");
    if (c_.busy()) throw Error("ai.ui_type: a generation is running (the prompt box is disabled)");
    c_.form().prompt.clear();
    type_text_ = args["text"].get<std::string>();
    type_submit_ = args.value("submit", true);
    type_phase_ = 1;
    type_wait_ = 0;
    focus_prompt_ = true;
    return json{{"ok", true}}.dump();
  });
  // Fold or unfold the panel's sections (screenshots of the history in tests).
  host.add_command("ai.ui_fold", [this](const std::string& a) {
    json args = a.empty() ? json::object() : json::parse(a, nullptr, false);
    if (!args.is_object()) throw Error("ai.ui_fold needs {settings?: bool, latency?: bool}");
    if (args.contains("settings")) settings_open_next_ = args["settings"].get<bool>();
    if (args.contains("latency")) latency_open_next_ = args["latency"].get<bool>();
    return json{{"ok", true}}.dump();
  });
  c_.set_ui_status([this] {
    return json{{"typing", type_phase_ != 0}, {"prompt_active", prompt_active_}, {"textures", tex_.size()}};
  });
}

}  // namespace cubeforge::ai
