// Plugin loading (dlopen), the per-plugin Host implementation, ChangeSet over the document's undo history, and
// guarded dispatch of plugin callbacks.
#include "plugin_host.h"

#include "core/bvh.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace cubeforge::editor {
namespace fs = std::filesystem;

std::string default_plugin_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "plugins";
  return (exe.parent_path() / "plugins").string();
}

// ---------------------------------------------------------------------------------------------------------------
class PluginHost::ChangeSetImpl : public ChangeSet {
 public:
  explicit ChangeSetImpl(Document& d) : doc_(d) {}
  EntityId add_mesh(const std::string& name, std::shared_ptr<const Mesh> mesh, const Transform& t, Vec3 color,
                    EntityId parent) override {
    if (!mesh) throw Error("add_mesh('" + name + "'): mesh is null");
    check_parent(parent);
    Entity e;
    e.name = name.empty() ? "Mesh" : name;
    e.mesh = std::move(mesh);
    e.transform = t;
    e.color = color;
    e.parent = parent;
    return doc_.add_entity(std::move(e));
  }
  EntityId add_group(const std::string& name, const Transform& t, EntityId parent) override {
    check_parent(parent);
    Entity e;
    e.name = name.empty() ? "Model" : name;
    e.is_group = true;
    e.transform = t;
    e.parent = parent;
    return doc_.add_entity(std::move(e));
  }
  void set_transform(EntityId id, const Transform& t) override {
    need(id);
    doc_.modify(id, "Set transform", [&](Entity& e) { e.transform = t; });
  }
  void set_name(EntityId id, const std::string& n) override {
    need(id);
    doc_.modify(id, "Rename", [&](Entity& e) { e.name = n; });
  }
  void set_color(EntityId id, Vec3 c) override {
    need(id);
    doc_.modify(id, "Colour", [&](Entity& e) { e.color = c; });
  }
  void set_visible(EntityId id, bool v) override {
    need(id);
    doc_.modify(id, "Visibility", [&](Entity& e) { e.visible = v; });
  }
  void set_mesh(EntityId id, std::shared_ptr<const Mesh> mesh) override {
    need(id);
    if (!mesh) throw Error("set_mesh: mesh is null");
    doc_.modify(id, "Set mesh", [&](Entity& e) {
      e.mesh = mesh;
      e.mesh_source.clear();
    });
  }
  void set_parent(EntityId id, EntityId parent) override {
    need(id);
    check_parent(parent);
    if (parent != kNoEntity && (parent == id || doc_.scene().is_ancestor(id, parent)))
      throw Error("set_parent: would create a cycle");
    doc_.reparent(id, parent);
  }
  void remove(EntityId id) override {
    need(id);
    doc_.execute(std::make_unique<RemoveEntityCommand>(id));
  }
  void select(const std::vector<EntityId>& ids) override { selection_ = ids; }
  std::optional<EntityInfo> entity(EntityId id) const override {
    const Entity* e = doc_.scene().find(id);
    if (!e) return std::nullopt;
    return make_info(doc_.scene(), *e);
  }
  std::optional<std::vector<EntityId>> selection_;

 private:
  void need(EntityId id) const {
    if (!doc_.scene().find(id)) throw Error("no entity with id " + std::to_string(id));
  }
  void check_parent(EntityId p) const {
    if (p != kNoEntity) need(p);
  }
  Document& doc_;
};

// ---------------------------------------------------------------------------------------------------------------
class PluginHost::HostImpl : public Host {
 public:
  HostImpl(PluginHost& owner, std::string name) : owner_(owner), name_(std::move(name)) {
    fs::path dir = fs::path(editor::config_dir()) / "plugins";
    settings_.open((dir / (name_ + ".json")).string());
    if (!settings_.load_error().empty()) owner_.doc_.log().warn(settings_.load_error());
  }
  int api_version() const override { return CUBEFORGE_EDITOR_API_VERSION; }
  const std::string& plugin_name() const override { return name_; }

  void add_panel(const std::string& title, std::function<void()> draw) override {
    owner_.panels_.push_back({name_, title, std::move(draw)});
  }
  void add_menu_item(const std::string& path, std::function<void()> action, const std::string& shortcut,
                     std::function<bool()> enabled) override {
    if (path.find('/') == std::string::npos) throw Error("menu path '" + path + "' needs a menu, e.g. Plugins/Item");
    owner_.menu_items_.push_back({name_, path, shortcut, std::move(action), std::move(enabled)});
  }
  void add_viewport_overlay(std::function<void(OverlayDraw&)> draw) override {
    owner_.overlays_.push_back({name_, std::move(draw)});
  }
  void add_viewport_input(std::function<ViewportReply(const ViewportEvent&)> handler) override {
    owner_.inputs_.push_back({name_, std::move(handler)});
  }
  void add_command(const std::string& name, std::function<std::string(const std::string&)> fn) override {
    if (owner_.commands_.count(name)) throw Error("command '" + name + "' is already registered");
    owner_.commands_[name] = {name_, std::move(fn)};
  }

  std::vector<EntityInfo> entities() const override {
    std::vector<EntityInfo> out;
    const Scene& s = owner_.doc_.scene();
    out.reserve(s.size());
    for (const auto& e : s.entities()) out.push_back(make_info(s, e));
    return out;
  }
  std::optional<EntityInfo> entity(EntityId id) const override {
    const Entity* e = owner_.doc_.scene().find(id);
    if (!e) return std::nullopt;
    return make_info(owner_.doc_.scene(), *e);
  }
  std::vector<EntityId> selection() const override { return owner_.doc_.selection().ids(); }

  bool apply(const std::string& step_name, const std::function<void(ChangeSet&)>& fn) override {
    Document& doc = owner_.doc_;
    if (!owner_.tasks_.on_owner_thread()) {
      doc.log().error("plugin " + name_ + ": apply('" + step_name + "') called off the main thread; use post()");
      return false;
    }
    ChangeSetImpl cs(doc);
    doc.begin_group(step_name.empty() ? name_ : step_name);
    try {
      fn(cs);
    } catch (const std::exception& ex) {
      doc.cancel_group();
      doc.log().error("plugin " + name_ + ": '" + step_name + "' failed and was rolled back: " + ex.what());
      return false;
    } catch (...) {
      doc.cancel_group();
      doc.log().error("plugin " + name_ + ": '" + step_name + "' failed and was rolled back");
      return false;
    }
    doc.end_group();
    doc.history().seal();
    if (cs.selection_) {
      doc.selection().set(*cs.selection_);
      doc.selection().prune(doc.scene());
    }
    return true;
  }

  void post(std::function<void()> task) override {
    owner_.tasks_.post(std::move(task));
    request_redraw();
  }
  bool on_main_thread() const override { return owner_.tasks_.on_owner_thread(); }

  std::optional<Ray> viewport_ray(float x, float y) const override {
    if (!owner_.viewport_ray_) return std::nullopt;
    return owner_.viewport_ray_(x, y);
  }
  RayHit raycast(const Ray& ray, bool include_ground, const std::vector<EntityId>& skip) const override {
    return raycast_scene(owner_.doc_.scene(), ray, include_ground, skip);
  }
  RayHit raycast_viewport(float x, float y, bool include_ground) const override {
    auto r = viewport_ray(x, y);
    if (!r) return {};
    return raycast(*r, include_ground, {});
  }

  std::string setting(const std::string& key, const std::string& default_json) const override {
    auto it = settings_.data().find(key);
    return it == settings_.data().end() ? default_json : it->dump();
  }
  void set_setting(const std::string& key, const std::string& value_json) override {
    nlohmann::json v;
    try {
      v = nlohmann::json::parse(value_json);
    } catch (const std::exception&) {
      v = value_json;  // plain text is stored as a JSON string
    }
    settings_.set(key, v);
  }

  void log(LogLevel level, const std::string& message) override { owner_.doc_.log().add(level, "[" + name_ + "] " + message); }
  void* imgui_context() const override { return owner_.imgui_ctx_; }
  std::string config_dir() const override {
    fs::path dir = fs::path(editor::config_dir()) / "plugins" / name_;
    std::error_code ec;
    fs::create_directories(dir, ec);
    return dir.string();
  }
  void request_redraw() override {
    if (owner_.redraw_) owner_.redraw_();
  }

 private:
  PluginHost& owner_;
  std::string name_;
  SettingsStore settings_;
};

// ---------------------------------------------------------------------------------------------------------------
PluginHost::PluginHost(Document& doc, TaskQueue& tasks) : doc_(doc), tasks_(tasks) {}

PluginHost::~PluginHost() {
  unload_all();
  // Libraries stay mapped until process exit: a plugin's threads or static destructors may still reference code.
}

std::vector<PluginStatus> PluginHost::load_directory(const std::string& dir) {
  std::vector<PluginStatus> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    doc_.log().info("plugins: no directory " + dir);
    return out;
  }
  std::vector<fs::path> files;
  for (auto& f : fs::directory_iterator(dir, ec))
    if (f.path().extension() == ".so") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  for (auto& f : files) out.push_back(load_library(f.string()));
  return out;
}

PluginStatus PluginHost::load_library(const std::string& path) {
  PluginStatus st;
  st.file = path;
  auto fail = [&](const std::string& msg) {
    st.error = msg;
    doc_.log().error("plugin " + fs::path(path).filename().string() + " skipped: " + msg);
    statuses_.push_back(st);
    return st;
  };
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = ::dlerror();
    return fail(std::string("cannot load library: ") + (e ? e : "unknown error"));
  }
  using EntryFn = const PluginEntry* (*)();
  ::dlerror();
  auto fn = reinterpret_cast<EntryFn>(::dlsym(lib, CUBEFORGE_PLUGIN_ENTRY_SYMBOL));
  if (!fn) {
    ::dlclose(lib);
    return fail(std::string("missing symbol ") + CUBEFORGE_PLUGIN_ENTRY_SYMBOL + " (build it with CUBEFORGE_PLUGIN)");
  }
  const PluginEntry* entry = nullptr;
  try {
    entry = fn();
  } catch (const std::exception& ex) {
    return fail(std::string("entry point threw: ") + ex.what());
  } catch (...) {
    return fail("entry point threw");
  }
  if (!entry) {
    ::dlclose(lib);
    return fail("entry point returned null");
  }
  if (entry->api_version != CUBEFORGE_EDITOR_API_VERSION) {
    std::string msg = "built for plugin API version " + std::to_string(entry->api_version) + ", editor has " +
                      std::to_string(CUBEFORGE_EDITOR_API_VERSION);
    ::dlclose(lib);
    return fail(msg);
  }
  libraries_.push_back(lib);
  return instantiate(entry, path);
}

PluginStatus PluginHost::load_static(const PluginEntry& entry) {
  if (entry.api_version != CUBEFORGE_EDITOR_API_VERSION) {
    PluginStatus st{"<static>", entry.name ? entry.name : "?", false, false,
                    "built for plugin API version " + std::to_string(entry.api_version)};
    doc_.log().error("plugin " + st.name + " skipped: " + st.error);
    statuses_.push_back(st);
    return st;
  }
  return instantiate(&entry, "<static>");
}

PluginStatus PluginHost::instantiate(const PluginEntry* entry, const std::string& file) {
  PluginStatus st;
  st.file = file;
  st.name = entry->name ? entry->name : "";
  auto fail = [&](const std::string& msg) {
    st.error = msg;
    std::string fname = fs::path(file).filename().string();
    doc_.log().error("plugin " + (st.name.empty() ? fname : st.name + " (" + fname + ")") + " skipped: " + msg);
    statuses_.push_back(st);
    return st;
  };
  if (st.name.empty() || !entry->create || !entry->destroy) return fail("incomplete PluginEntry (name/create/destroy)");
  for (auto& p : plugins_)
    if (p.name == st.name) return fail("a plugin named '" + st.name + "' is already loaded");
  Loaded l;
  l.name = st.name;
  l.destroy = entry->destroy;
  l.host = std::make_unique<HostImpl>(*this, st.name);
  try {
    l.plugin = entry->create();
    if (!l.plugin) return fail("create() returned null");
    l.plugin->on_load(*l.host);
  } catch (const std::exception& ex) {
    drop_registrations(st.name);
    return fail(std::string("exception in on_load: ") + ex.what());
  } catch (...) {
    drop_registrations(st.name);
    return fail("unknown exception in on_load");
  }
  plugins_.push_back(std::move(l));
  st.loaded = true;
  statuses_.push_back(st);
  doc_.log().info("plugin " + st.name + " loaded (" + file + ")");
  return st;
}

void PluginHost::unload_all() {
  for (auto& p : plugins_) {
    if (p.plugin) {
      try {
        p.plugin->on_unload(*p.host);
      } catch (...) {
      }
      try {
        p.destroy(p.plugin);
      } catch (...) {
      }
      p.plugin = nullptr;
    }
  }
  panels_.clear();
  menu_items_.clear();
  overlays_.clear();
  inputs_.clear();
  commands_.clear();
  tasks_.drain();  // run (and drop) what plugins left behind while their code is still mapped
  plugins_.clear();
}

void PluginHost::drop_registrations(const std::string& owner) {
  auto by = [&](auto& v) { v.erase(std::remove_if(v.begin(), v.end(), [&](auto& x) { return x.owner == owner; }), v.end()); };
  by(panels_);
  by(menu_items_);
  by(overlays_);
  by(inputs_);
  for (auto it = commands_.begin(); it != commands_.end();)
    it = it->second.owner == owner ? commands_.erase(it) : std::next(it);
}

bool PluginHost::is_active(const std::string& owner) const {
  for (auto& p : plugins_)
    if (p.name == owner) return p.active;
  return false;
}

void PluginHost::disable(const std::string& owner, const std::string& where, const std::string& what) {
  doc_.log().error("plugin " + owner + " disabled: exception in " + where + ": " + what);
  if (doc_.history().in_group()) doc_.cancel_group();
  for (auto& p : plugins_)
    if (p.name == owner) p.active = false;
  for (auto& s : statuses_)
    if (s.name == owner && s.loaded) {
      s.disabled = true;
      s.error = where + ": " + what;
    }
  drop_registrations(owner);
}

template <class F>
bool PluginHost::guarded(const std::string& owner, const char* where, F&& f) {
  if (!is_active(owner)) return false;
  try {
    f();
    return true;
  } catch (const std::exception& ex) {
    disable(owner, where, ex.what());
  } catch (...) {
    disable(owner, where, "unknown exception");
  }
  return false;
}

void PluginHost::frame() {
  tasks_.drain([this](const std::string& err) { doc_.log().error("plugin task failed: " + err); });
  for (size_t i = 0; i < plugins_.size(); ++i) {
    Loaded& p = plugins_[i];
    if (!p.active || !p.plugin) continue;
    guarded(p.name, "on_frame", [&] { p.plugin->on_frame(*p.host); });
  }
}

void PluginHost::draw_panel(const Panel& p) {
  Panel copy = p;  // the registry may change if the plugin gets disabled mid-call
  guarded(copy.owner, "panel draw", [&] { copy.draw(); });
}

void PluginHost::run_menu_item(const MenuItem& m) {
  MenuItem copy = m;
  guarded(copy.owner, "menu item", [&] { copy.action(); });
}

bool PluginHost::menu_item_enabled(const MenuItem& m) {
  if (!m.enabled) return true;
  bool on = false;
  MenuItem copy = m;
  guarded(copy.owner, "menu item enabled()", [&] { on = copy.enabled(); });
  return on;
}

void PluginHost::draw_overlays(OverlayDraw& draw) {
  auto list = overlays_;
  for (auto& o : list) guarded(o.owner, "viewport overlay", [&] { o.draw(draw); });
}

bool PluginHost::dispatch_input(const ViewportEvent& ev) {
  auto list = inputs_;
  for (auto& h : list) {
    ViewportReply r = ViewportReply::Ignored;
    guarded(h.owner, "viewport input", [&] { r = h.fn(ev); });
    if (r == ViewportReply::Consumed) return true;
  }
  return false;
}

std::vector<std::string> PluginHost::command_names() const {
  std::vector<std::string> out;
  for (auto& [k, v] : commands_) out.push_back(k);
  return out;
}

std::string PluginHost::run_command(const std::string& name, const std::string& args_json) {
  auto it = commands_.find(name);
  if (it == commands_.end()) {
    std::string known;
    for (auto& n : command_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown plugin command '" + name + "'" + (known.empty() ? " (no plugin commands registered)" : " (known: " + known + ")"));
  }
  Command cmd = it->second;
  try {
    return cmd.fn(args_json);
  } catch (const std::exception& ex) {
    if (doc_.history().in_group()) doc_.cancel_group();
    throw Error("plugin command '" + name + "' failed: " + ex.what());
  }
}

}  // namespace cubeforge::editor
