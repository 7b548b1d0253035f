// Cubeforge editor plugin API (version 1). The only header a plugin needs; it has no link dependency on the editor.
//
// A plugin is a class derived from cubeforge::editor::Plugin. The editor calls on_load(Host&) once on the main
// thread; the plugin registers its panels, menu items, viewport hooks and script commands there and keeps the Host
// reference for later. Everything on Host is main-thread only, except post(), log() and api_version(), which any
// thread may call. Worker threads never touch the scene: they post() a closure that runs at the start of the next
// frame on the main thread.
//
// Scene changes are made only through Host::apply(name, fn): every change made inside fn through the ChangeSet is
// recorded as commands and the whole call becomes ONE named undo step ("Generate: red chair"). If fn throws, every
// change made so far is rolled back, the error is logged and apply returns false.
//
// Packaging. Shared library: put CUBEFORGE_PLUGIN(MyPlugin, "my-plugin") in one .cpp, build a MODULE/SHARED library
// linked against the CMake target cubeforge::editor_api, and drop the .so into the plugins directory (default:
// <dir of the cubeforge binary>/plugins, or --plugins DIR, or $CUBEFORGE_PLUGIN_DIR). The editor checks the exported
// entry point and API version; a plugin with a missing symbol, another API version or an exception in on_load is
// reported in the Output panel and skipped. Static linking (tests, built-in plugins): hand a PluginEntry (see
// make_plugin_entry) to the host directly.
//
// ImGui. Panels and menu callbacks draw with Dear ImGui 1.86. A plugin that links its own copy of ImGui (Debian's
// static libimgui.a) must bind the editor's context once in on_load:
//     ImGui::SetCurrentContext(static_cast<ImGuiContext*>(host.imgui_context()));
// (the context never changes during the editor's life; harmless when statically linked). Do not create windows in
// panel callbacks: the editor owns Begin/End and calls the callback inside the panel's window.
#pragma once
#include <cubeforge/editor/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#define CUBEFORGE_EDITOR_API_VERSION 1

namespace cubeforge::editor {

inline constexpr int kEditorApiVersion = CUBEFORGE_EDITOR_API_VERSION;

// Records scene changes as commands inside the undo step opened by Host::apply(). Ids returned by add_* are valid
// immediately (for set_transform, parenting, selection) and stay valid after undo + redo.
class ChangeSet {
 public:
  virtual ~ChangeSet() = default;
  // Adds a part with an (immutable, shared) mesh. parent may be a group created in the same ChangeSet.
  virtual EntityId add_mesh(const std::string& name, std::shared_ptr<const Mesh> mesh, const Transform& transform,
                            Vec3 color = {1.f, 1.f, 1.f}, EntityId parent = kNoEntity) = 0;
  // Adds an empty group ("Model") that other entities can be parented to.
  virtual EntityId add_group(const std::string& name, const Transform& transform = {}, EntityId parent = kNoEntity) = 0;
  virtual void set_transform(EntityId id, const Transform& transform) = 0;
  virtual void set_name(EntityId id, const std::string& name) = 0;
  virtual void set_color(EntityId id, Vec3 color) = 0;
  virtual void set_visible(EntityId id, bool visible) = 0;
  virtual void set_mesh(EntityId id, std::shared_ptr<const Mesh> mesh) = 0;
  virtual void set_parent(EntityId id, EntityId parent) = 0;  // keeps the world transform
  virtual void remove(EntityId id) = 0;                        // with its descendants
  // Replaces the selection when the step is applied (selection itself is not part of undo).
  virtual void select(const std::vector<EntityId>& ids) = 0;
  // Read access to the scene as it is inside the step.
  virtual std::optional<EntityInfo> entity(EntityId id) const = 0;
};

// Everything an overlay hook may draw this frame. Shapes are in world space, drawn after the scene with alpha
// blending, depth-tested against the scene but not writing depth ("ghost" previews, placement boxes).
class OverlayDraw {
 public:
  virtual ~OverlayDraw() = default;
  // Translucent mesh: rgba[3] is the opacity. The mesh is uploaded to the GPU once per distinct shared_ptr and cached
  // while the plugin keeps drawing it, so draw the same shared_ptr every frame instead of copying the mesh.
  virtual void ghost_mesh(std::shared_ptr<const Mesh> mesh, const Transform& transform, Vec4 rgba) = 0;
  virtual void line(Vec3 a, Vec3 b, Vec4 rgba) = 0;
  virtual void box(Vec3 min, Vec3 max, const Transform& transform, Vec4 rgba) = 0;  // wire box
  // Camera of the viewport being drawn (column-major 4x4) and its size in pixels.
  virtual std::array<float, 16> view_projection() const = 0;
  virtual std::array<float, 2> viewport_size() const = 0;
};

enum class MouseButton { Left = 0, Right = 1, Middle = 2 };

struct ViewportEvent {
  enum class Type { Press, Release, Move, Wheel } type = Type::Move;
  MouseButton button = MouseButton::Left;  // for Press/Release
  float x = 0.f, y = 0.f;                  // pixels, origin top-left of the viewport image
  float wheel = 0.f;                       // for Wheel
  bool dragging = false;                   // Move with a button held
  bool ctrl = false, shift = false, alt = false;
};

enum class ViewportReply { Ignored, Consumed };

class Host {
 public:
  virtual ~Host() = default;
  virtual int api_version() const = 0;
  virtual const std::string& plugin_name() const = 0;  // the plugin this Host was handed to

  // ---- registration (call from on_load) ----
  // A panel in the right-hand sidebar; draw() is called every frame inside the panel's ImGui window.
  virtual void add_panel(const std::string& title, std::function<void()> draw) = 0;
  // A menu item. path is "Menu/Item" or "Menu/Sub/Item" (e.g. "Plugins/AI/Generate..."); shortcut is display text.
  virtual void add_menu_item(const std::string& path, std::function<void()> action, const std::string& shortcut = {},
                             std::function<bool()> enabled = {}) = 0;
  // Called every frame while the viewport is drawn.
  virtual void add_viewport_overlay(std::function<void(OverlayDraw&)> draw) = 0;
  // Mouse events over the viewport, before the editor's own camera/gizmo/selection handling. Return Consumed to
  // keep the editor from acting on the event (e.g. click-to-place). Handlers are asked in registration order.
  virtual void add_viewport_input(std::function<ViewportReply(const ViewportEvent&)> handler) = 0;
  // A command invocable by the script mode ({"do": "plugin_command", "command": name, "args": {...}}) and from
  // other plugins. args and the return value are JSON text. Throwing reports a failed action.
  virtual void add_command(const std::string& name, std::function<std::string(const std::string& args_json)> fn) = 0;

  // ---- scene (read) ----
  virtual std::vector<EntityInfo> entities() const = 0;
  virtual std::optional<EntityInfo> entity(EntityId id) const = 0;
  virtual std::vector<EntityId> selection() const = 0;

  // ---- scene (write): one named undo step; see the file comment ----
  virtual bool apply(const std::string& step_name, const std::function<void(ChangeSet&)>& fn) = 0;

  // ---- threads ----
  // Any thread: runs task on the main thread at the start of the next frame. Exceptions are logged.
  virtual void post(std::function<void()> task) = 0;
  virtual bool on_main_thread() const = 0;

  // ---- picking ----
  // Ray through a viewport pixel (origin top-left), nullopt when there is no viewport.
  virtual std::optional<Ray> viewport_ray(float x, float y) const = 0;
  // Closest hit of a world ray against visible parts, or the ground plane y = 0 when include_ground and nothing
  // else is hit first (hit.on_ground). skip: entities to ignore (e.g. the thing being placed).
  virtual RayHit raycast(const Ray& ray, bool include_ground = true, const std::vector<EntityId>& skip = {}) const = 0;
  // Convenience: viewport_ray + raycast.
  virtual RayHit raycast_viewport(float x, float y, bool include_ground = true) const = 0;

  // ---- per-plugin persistent settings (JSON values as text; saved on change under the config dir) ----
  virtual std::string setting(const std::string& key, const std::string& default_json = "null") const = 0;
  virtual void set_setting(const std::string& key, const std::string& value_json) = 0;

  // ---- misc ----
  virtual void log(LogLevel level, const std::string& message) = 0;  // any thread; shown in Output
  virtual void* imgui_context() const = 0;                          // ImGuiContext*
  virtual std::string config_dir() const = 0;                       // this plugin's own writable folder
  virtual void request_redraw() = 0;                                // any thread: wake the UI loop
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual void on_load(Host& host) = 0;
  virtual void on_frame(Host& /*host*/) {}   // every frame, main thread, before panels are drawn
  virtual void on_unload(Host& /*host*/) {}  // editor shutdown; stop worker threads here
};

// What a plugin library exports (by value of its entry function) so the host can check and create it.
struct PluginEntry {
  int api_version = 0;            // must equal CUBEFORGE_EDITOR_API_VERSION
  const char* name = nullptr;     // unique, used for settings and logs
  Plugin* (*create)() = nullptr;
  void (*destroy)(Plugin*) = nullptr;
};

template <class T>
PluginEntry make_plugin_entry(const char* name) {
  return PluginEntry{CUBEFORGE_EDITOR_API_VERSION, name, []() -> Plugin* { return new T(); },
                     [](Plugin* p) { delete p; }};
}

}  // namespace cubeforge::editor

// Name of the C entry point the editor looks up in a plugin shared library.
#define CUBEFORGE_PLUGIN_ENTRY_SYMBOL "cubeforge_plugin_entry"

// Defines the exported entry point of a shared-library plugin. Use once per library.
#define CUBEFORGE_PLUGIN(PluginClass, name_literal)                                                     \
  extern "C" __attribute__((visibility("default"))) const ::cubeforge::editor::PluginEntry*             \
  cubeforge_plugin_entry() {                                                                            \
    static const ::cubeforge::editor::PluginEntry entry =                                               \
        ::cubeforge::editor::make_plugin_entry<PluginClass>(name_literal);                              \
    return &entry;                                                                                      \
  }
