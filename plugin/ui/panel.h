// The AI sidebar panel (Dear ImGui 1.86): model selector, prompt (Ctrl+Enter generates), seed / guidance /
// sampling and variations (off with greedy) / bounding box / resolution / face cap, advanced fold, landing spot,
// progress with Cancel (Esc; "variation k/N" or "N variations"), messages, the latency HUD with CSV/JSON export, and
// the history with thumbnails (a job's variations marked "vK/N"). It draws from the Controller
// and calls into it; no logic of its own beyond widgets. Controls are disabled while a job runs.
//
// UI automation for the scripted mode: ai.ui_type {text, submit} focuses the prompt box, types the text through
// ImGui's input queue and presses Ctrl+Enter, so an end-to-end test drives the real widget; ai.ui_fold
// {settings, latency} folds sections (so a screenshot shows the history).
#pragma once
#include "appearance/prompt_colour.h"
#include "controller/controller.h"
#include "ui/textures.h"

#include <optional>
#include <string>

namespace cubeforge::ai {

class Panel {
 public:
  explicit Panel(Controller& c) : c_(c) {}
  void draw();           // inside the editor's panel window
  void before_frame();   // from Plugin::on_frame, before ImGui::NewFrame (feeds scripted typing)
  void register_commands(editor::Host& host);
  void release_gl() { tex_.clear(); }

 private:
  void model_section();
  void prompt_section();
  void settings_section(bool busy);
  void spot_section(bool busy);
  void run_section();
  void messages_section();
  void latency_section();
  void history_section();
  void history_drop();

  Controller& c_;
  ThumbnailTextures tex_;
  std::string model_dir_edit_;
  bool model_dir_init_ = false;
  std::string export_id_, export_path_;
  int export_format_ = 0;
  bool open_export_popup_ = false;
  std::string csv_path_, json_path_;
  std::string colour_prompt_ = "\x01";          // the prompt colour_named_ was found in (re-read when it changes)
  std::optional<NamedColour> colour_named_;
  const ModelInfo* known_for_ = nullptr;
  std::string known_joined_;

  // scripted typing
  int type_phase_ = 0;          // 0 idle, 1 focus requested, 2 focused, 3 typed, 4 enter down, 5 enter up
  std::string type_text_;
  bool type_submit_ = false;
  bool focus_prompt_ = false;
  std::optional<bool> settings_open_next_, latency_open_next_;
  bool prompt_active_ = false;
  int type_wait_ = 0;
};

}  // namespace cubeforge::ai
