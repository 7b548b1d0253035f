// Plugin host: loads plugins (shared libraries from a directory, or static PluginEntry values), checks their entry
// point and API version, gives each one a Host, keeps what they register (panels, menu items, viewport overlays and
// input handlers, script commands), and calls back into them with every call guarded: a plugin that throws is
// reported in the Output log and disabled, the editor keeps running. No GL or ImGui in here: the UI layer draws the
// registered panels and supplies the viewport ray and the ImGui context.
#pragma once
#include <cubeforge/editor/plugin_api.h>

#include "core/document.h"
#include "core/settings.h"
#include "core/task_queue.h"

#include <map>
#include <memory>

namespace cubeforge::editor {

struct PluginStatus {
  std::string file;  // library path, or "<static>"
  std::string name;
  bool loaded = false;
  bool disabled = false;  // loaded, then switched off after an exception
  std::string error;
};

class PluginHost {
 public:
  struct Panel { std::string owner, title; std::function<void()> draw; };
  struct MenuItem { std::string owner, path, shortcut; std::function<void()> action; std::function<bool()> enabled; };
  struct Overlay { std::string owner; std::function<void(OverlayDraw&)> draw; };
  struct InputHandler { std::string owner; std::function<ViewportReply(const ViewportEvent&)> fn; };
  struct Command { std::string owner; std::function<std::string(const std::string&)> fn; };

  PluginHost(Document& doc, TaskQueue& tasks);
  ~PluginHost();
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Services provided by the UI (all optional).
  void set_viewport_ray(std::function<std::optional<Ray>(float, float)> fn) { viewport_ray_ = std::move(fn); }
  void set_imgui_context(void* ctx) { imgui_ctx_ = ctx; }
  void set_redraw(std::function<void()> fn) { redraw_ = std::move(fn); }

  // Loads every *.so in dir (sorted by name). A missing directory is not an error. Returns statuses of this call.
  std::vector<PluginStatus> load_directory(const std::string& dir);
  PluginStatus load_library(const std::string& path);
  PluginStatus load_static(const PluginEntry& entry);
  void unload_all();  // calls on_unload, destroys plugins (libraries stay mapped until the host dies)
  const std::vector<PluginStatus>& statuses() const { return statuses_; }

  // Per frame (main thread): drain posted tasks, then on_frame of every plugin.
  void frame();
  size_t pending_tasks() const { return tasks_.pending(); }

  // Guarded dispatch used by the UI / script mode.
  const std::vector<Panel>& panels() const { return panels_; }
  const std::vector<MenuItem>& menu_items() const { return menu_items_; }
  void draw_panel(const Panel& p);
  void run_menu_item(const MenuItem& m);
  bool menu_item_enabled(const MenuItem& m);
  void draw_overlays(OverlayDraw& draw);
  bool dispatch_input(const ViewportEvent& ev);  // true when a plugin consumed it
  bool has_command(const std::string& name) const { return commands_.count(name) > 0; }
  std::vector<std::string> command_names() const;
  // Throws cubeforge::Error (unknown command, or the plugin's exception message).
  std::string run_command(const std::string& name, const std::string& args_json);

  bool is_active(const std::string& owner) const;
  Document& document() { return doc_; }

 private:
  class HostImpl;
  class ChangeSetImpl;
  struct Loaded {
    std::string name;
    std::unique_ptr<HostImpl> host;
    Plugin* plugin = nullptr;
    void (*destroy)(Plugin*) = nullptr;
    bool active = true;
  };
  PluginStatus instantiate(const PluginEntry* entry, const std::string& file);
  void disable(const std::string& owner, const std::string& where, const std::string& what);
  void drop_registrations(const std::string& owner);
  template <class F>
  bool guarded(const std::string& owner, const char* where, F&& f);

  Document& doc_;
  TaskQueue& tasks_;
  std::vector<void*> libraries_;
  std::vector<Loaded> plugins_;
  std::vector<PluginStatus> statuses_;
  std::vector<Panel> panels_;
  std::vector<MenuItem> menu_items_;
  std::vector<Overlay> overlays_;
  std::vector<InputHandler> inputs_;
  std::map<std::string, Command> commands_;
  std::function<std::optional<Ray>(float, float)> viewport_ray_;
  std::function<void()> redraw_;
  void* imgui_ctx_ = nullptr;
};

// The default plugins directory: <directory of the running executable>/plugins.
std::string default_plugin_dir();

}  // namespace cubeforge::editor
