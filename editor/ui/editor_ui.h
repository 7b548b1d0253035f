// The editor window's ImGui layer: fixed Studio-like layout (menu bar; Explorer left; viewport centre with Output
// below; plugin sidebar + Properties right; status bar), keyboard shortcuts, viewport camera/picking/gizmo input,
// file dialogs (path prompts), drag-and-drop import, and the viewport render into the Renderer's framebuffer. One class,
// defined by concern: editor_ui.cpp (frame, layout, shortcuts, menus), scene_panels.cpp, viewport_panel.cpp, popups.cpp.
#pragma once
#include "core/settings.h"
#include "gizmo.h"
#include "plugin_host/plugin_host.h"
#include "render/renderer.h"

#include <deque>
#include <set>

namespace cubeforge::editor {

class EditorUI {
 public:
  EditorUI(Document& doc, PluginHost& host, Renderer& renderer);

  // Builds all windows for this frame and renders the viewport. Call between ImGui::NewFrame and ImGui::Render.
  void frame(float dt_seconds);

  void set_backend_name(std::string s) { backend_ = std::move(s); }
  // Layout remembered across sessions (the plugin sidebar's height): read now, written when it changes.
  void use_settings(SettingsStore* s);
  Camera& camera() { return camera_; }
  RenderOptions& options() { return options_; }
  Gizmo& gizmo() { return gizmo_; }
  glm::vec2 viewport_size() const { return vp_size_; }
  glm::vec2 viewport_origin() const { return vp_origin_; }
  std::optional<Ray> viewport_ray(float x, float y) const;

  // Quitting: request_quit() asks to save unsaved changes first; should_quit() turns true when done.
  void request_quit() { quit_requested_ = true; }
  bool should_quit() const { return quit_confirmed_; }
  void force_quit() { quit_confirmed_ = true; }

  void on_drop(const std::vector<std::string>& paths);
  void offer_recovery() { recovery_popup_ = true; }
  void screenshot(const std::string& path) { renderer_.save_png(path); }

  // Scripted mouse (set before ImGui::NewFrame by the app): overrides the real mouse while set.
  struct ScriptMouse {
    glm::vec2 pos{0.f};  // viewport pixels (window pixels if `window`)
    bool down = false;
    bool window = false;
  };
  std::optional<ScriptMouse> script_mouse;
  void apply_script_mouse();  // call after the platform backend's NewFrame, before ImGui::NewFrame

  float frame_ms() const { return frame_ms_; }
  float sidebar_fraction() const { return sidebar_frac_; }

 private:
  void layout();
  void menu_bar();
  void explorer();
  void properties();
  void output();
  void status_bar();
  void viewport();
  void plugin_sidebar();
  void popups();
  void shortcuts();
  void viewport_input(bool hovered, glm::vec2 mouse_px);
  void frame_selection();
  void separate_parts();  // Edit > Separate parts, with its outcome in the Output panel
  Vec3 placement_point();
  void run_guarded(const std::string& what, const std::function<void()>& fn);
  void plugin_menu_items(const std::string& menu);
  void open_path_prompt(const std::string& kind, const std::string& initial);

  Document& doc_;
  PluginHost& host_;
  Renderer& renderer_;
  Camera camera_;
  RenderOptions options_;
  Gizmo gizmo_;
  std::string backend_ = "OpenGL";

  // layout rects
  float menu_h_ = 20.f, status_h_ = 24.f, left_w_ = 250.f, right_w_ = 330.f, output_h_ = 150.f;
  float sidebar_frac_ = 0.55f;  // share of the right column's height the plugin sidebar takes (its bottom edge drags)
  float sidebar_frac_saved_ = 0.55f;
  SettingsStore* settings_ = nullptr;
  glm::vec2 vp_origin_{0.f}, vp_size_{640.f, 480.f};

  // explorer
  std::set<EntityId> collapsed_;
  EntityId renaming_ = kNoEntity;
  char rename_buf_[256] = {};
  bool rename_focus_ = false;
  // properties
  char name_buf_[256] = {};
  EntityId name_buf_for_ = kNoEntity;
  // viewport interaction
  bool dragging_camera_ = false;
  glm::vec2 press_pos_{0.f};
  bool press_in_viewport_ = false;
  bool gizmo_owned_press_ = false;
  // dialogs
  std::string prompt_kind_;
  char path_buf_[1024] = {};
  bool prompt_open_ = false;
  int import_up_ = 0;
  bool import_normalize_ = false;
  float import_size_ = 4.f;
  bool export_selection_ = true;
  bool recovery_popup_ = false;
  bool quit_requested_ = false, quit_confirmed_ = false;
  std::string error_popup_;
  bool output_autoscroll_ = true;
  size_t output_seen_ = 0;
  float frame_ms_ = 0.f;
  int plugin_tab_ = 0;
};

}  // namespace cubeforge::editor
