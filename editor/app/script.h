// Scripted mode (`cubeforge --script FILE`): runs a JSON list of actions against the real editor, one step per
// frame, so the window, renderer, plugins and task queue all run as for a user. The first failing action stops the
// run with a message naming the action; the process then exits non-zero. Format: see README ("Script mode").
#pragma once
#include "core/document.h"
#include "plugin_host/plugin_host.h"
#include "render/camera.h"

#include <chrono>
#include <nlohmann/json.hpp>

namespace cubeforge::editor {

class EditorUI;

struct ScriptEnv {
  Document& doc;
  PluginHost& host;
  Camera& camera;
  // PNG of the viewport (w, h > 0: at that size, --headless), or of the whole window (window: panels included).
  // Returns false while the file is not written yet (a window screenshot is taken at the next frame's buffer swap;
  // the action is called again each frame until true). Throws cubeforge::Error.
  std::function<bool(const std::string& path, int w, int h, bool window)> screenshot;
  EditorUI* ui = nullptr;  // null in --headless mode (no window, no gizmo)
};

class ScriptRunner {
 public:
  enum class State { Running, Done, Failed };
  void load(const std::string& path);  // throws cubeforge::Error
  void load_json(const nlohmann::json& doc);
  State step(ScriptEnv& env);
  const std::string& error() const { return error_; }
  bool quit_requested() const { return quit_; }
  size_t size() const { return actions_.size(); }

 private:
  bool run_action(const nlohmann::json& a, ScriptEnv& env);  // false = not finished yet (call again next frame)
  bool wait_condition(const nlohmann::json& a, ScriptEnv& env);
  bool gizmo_drag(const nlohmann::json& a, ScriptEnv& env);
  bool mouse_drag(const nlohmann::json& a, ScriptEnv& env);
  bool drag_step(EditorUI& ui);  // the press, move and release of a drag from drag_from_ to drag_to_
  EntityId resolve(const nlohmann::json& a, ScriptEnv& env, bool required = true) const;

  std::vector<nlohmann::json> actions_;
  size_t pc_ = 0;
  std::string error_;
  bool quit_ = false;
  bool started_ = false;
  int frames_ = 0;
  std::chrono::steady_clock::time_point start_;
  // gizmo drag state
  int drag_phase_ = 0;
  glm::vec2 drag_from_{0.f}, drag_to_{0.f};
  bool drag_window_ = false;  // drag_from_ / drag_to_ in window pixels (mouse_drag), else viewport pixels
  uint64_t drag_changes_ = 0;
  std::vector<double> frame_times_;
  std::chrono::steady_clock::time_point last_frame_;
};

}  // namespace cubeforge::editor
