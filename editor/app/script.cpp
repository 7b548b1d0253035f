// Script actions.
#include "script.h"

#include "core/scene_io.h"
#include "ui/editor_ui.h"

#include <thread>
#include <algorithm>
#include <cstdio>

namespace cubeforge::editor {
using json = nlohmann::json;

namespace {

Vec3 vec3(const json& j, const char* key) {
  const json& a = j.at(key);
  if (!a.is_array() || a.size() != 3) throw Error(std::string("'") + key + "' must be [x, y, z]");
  return {a[0].get<float>(), a[1].get<float>(), a[2].get<float>()};
}

std::string args_text(const json& a) {
  if (!a.contains("args")) return "{}";
  return a["args"].is_string() ? a["args"].get<std::string>() : a["args"].dump();
}

bool same_result(const std::string& got, const json& want) {
  if (want.is_string() && got == want.get<std::string>()) return true;
  try {
    return json::parse(got) == want;
  } catch (...) {
    return false;
  }
}

PartKind part_kind(const std::string& s) {
  PartKind k;
  if (part_from_source("primitive:" + s, k)) return k;
  throw Error("unknown part '" + s + "' (block, sphere, cylinder, wedge)");
}

}  // namespace

void ScriptRunner::load(const std::string& path) { load_json(read_json_file(path, "script")); }

void ScriptRunner::load_json(const json& doc) {
  const json& list = doc.is_object() && doc.contains("actions") ? doc["actions"] : doc;
  if (!list.is_array()) throw Error("script must be a JSON array of actions or {\"actions\": [...]}");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& a = list[i];
    if (!a.is_object() || !(a.contains("do") || a.contains("action")))
      throw Error("script action #" + std::to_string(i + 1) + " needs a \"do\" field");
    actions_.push_back(a);
  }
}

EntityId ScriptRunner::resolve(const json& a, ScriptEnv& env, bool required) const {
  if (a.contains("id")) {
    EntityId id = a["id"].get<EntityId>();
    if (!env.doc.scene().find(id)) throw Error("no entity with id " + std::to_string(id));
    return id;
  }
  if (a.contains("name")) {
    const Entity* e = env.doc.scene().find_by_name(a["name"].get<std::string>());
    if (!e) throw Error("no entity named '" + a["name"].get<std::string>() + "'");
    return e->id;
  }
  EntityId id = env.doc.selection().primary();
  if (id == kNoEntity && required) throw Error("no entity given (name/id) and nothing selected");
  return id;
}

ScriptRunner::State ScriptRunner::step(ScriptEnv& env) {
  if (!error_.empty()) return State::Failed;
  if (quit_ || pc_ >= actions_.size()) return State::Done;
  const json& a = actions_[pc_];
  std::string name = a.value("do", a.value("action", std::string("?")));
  if (!started_) {
    started_ = true;
    frames_ = 0;
    start_ = std::chrono::steady_clock::now();
  }
  try {
    if (!run_action(a, env)) {
      ++frames_;
      return State::Running;
    }
  } catch (const std::exception& ex) {
    env.ui ? (void)(env.ui->script_mouse = std::nullopt) : (void)0;
    error_ = "script action #" + std::to_string(pc_ + 1) + " (" + name + ") failed: " + ex.what();
    env.doc.log().error(error_);
    return State::Failed;
  }
  env.doc.log().info("script: #" + std::to_string(pc_ + 1) + " " + name + " ok");
  ++pc_;
  started_ = false;
  return quit_ || pc_ >= actions_.size() ? State::Done : State::Running;
}

bool ScriptRunner::run_action(const json& a, ScriptEnv& env) {
  Document& doc = env.doc;
  std::string what = a.value("do", a.value("action", std::string()));
  if (what == "open") {
    doc.open(a.at("path").get<std::string>());
    env.camera.frame(doc.scene().scene_bounds());
  } else if (what == "new") {
    doc.new_scene();
  } else if (what == "import") {
    ImportOptions opt;
    std::string up = a.value("up", std::string("auto"));
    opt.up = up == "y" ? UpAxis::Y : up == "z" ? UpAxis::Z : UpAxis::Auto;
    if (a.contains("normalize")) {
      opt.normalize_size = true;
      opt.target_size = a["normalize"].get<float>();
    }
    opt.base_center = a.value("base_center", false);
    opt.unit_scale = a.value("unit_scale", 1.f);
    auto ids = doc.import_file(a.at("path").get<std::string>(), opt);
    if (a.contains("rename") && ids.size() == 1) doc.rename(ids[0], a["rename"].get<std::string>());
    env.camera.frame(doc.scene().scene_bounds());
  } else if (what == "insert") {
    std::optional<Vec3> pos;
    if (a.contains("position")) pos = vec3(a, "position");
    EntityId id = doc.insert_part(part_kind(a.value("part", std::string("block"))), pos);
    if (a.contains("rename")) doc.rename(id, a["rename"].get<std::string>());
  } else if (what == "select") {
    std::vector<EntityId> ids;
    if (a.contains("names"))
      for (auto& n : a["names"]) {
        const Entity* e = doc.scene().find_by_name(n.get<std::string>());
        if (!e) throw Error("no entity named '" + n.get<std::string>() + "'");
        ids.push_back(e->id);
      }
    if (a.contains("ids"))
      for (auto& n : a["ids"]) ids.push_back(n.get<EntityId>());
    if (a.contains("name") || a.contains("id")) ids.push_back(resolve(a, env));
    if (ids.empty() && !a.value("none", false)) throw Error("select needs name, names, id, ids or \"none\": true");
    doc.selection().set(ids);
  } else if (what == "set_transform") {
    EntityId id = resolve(a, env);
    Transform t = doc.scene().find(id)->transform;
    if (a.contains("position")) t.position = vec3(a, "position");
    if (a.contains("rotation")) t.rotation = vec3(a, "rotation");
    if (a.contains("scale")) t.scale = vec3(a, "scale");
    doc.set_transform(id, t);
    doc.history().seal();
  } else if (what == "mouse_drag") {
    return mouse_drag(a, env);
  } else if (what == "gizmo_drag") {
    return gizmo_drag(a, env);
  } else if (what == "undo" || what == "redo") {
    int n = a.value("count", 1);
    for (int i = 0; i < n; ++i)
      if (!(what == "undo" ? doc.undo() : doc.redo())) throw Error("nothing to " + what);
  } else if (what == "delete") {
    if (a.contains("name") || a.contains("id")) doc.selection().select(resolve(a, env));
    if (doc.selection().empty()) throw Error("nothing selected");
    doc.delete_selection();
  } else if (what == "duplicate") {
    if (doc.duplicate_selection().empty()) throw Error("nothing selected");
  } else if (what == "separate") {
    if (a.contains("name") || a.contains("id")) doc.selection().set({resolve(a, env)});
    if (doc.separate_selection().empty()) throw Error("separate: no selected mesh has more than one part");
  } else if (what == "group") {
    EntityId g = doc.group_selection();
    if (g == kNoEntity) throw Error("nothing selected");
    if (a.contains("rename")) doc.rename(g, a["rename"].get<std::string>());
  } else if (what == "plugin_command") {
    std::string cmd = a.at("command").get<std::string>();
    std::string result = env.host.run_command(cmd, args_text(a));
    doc.log().info("script: " + cmd + " -> " + result);
    if (a.contains("expect") && !same_result(result, a["expect"]))
      throw Error("'" + cmd + "' returned " + result + ", expected " + a["expect"].dump());
  } else if (what == "wait_for") {
    return wait_condition(a, env);
  } else if (what == "expect") {
    float tol = a.value("tolerance", 1e-3f);
    if (a.contains("entity_count") && doc.scene().size() != a["entity_count"].get<size_t>())
      throw Error("expected " + a["entity_count"].dump() + " entities, found " + std::to_string(doc.scene().size()));
    if (a.contains("selection_count") && doc.selection().size() != a["selection_count"].get<size_t>())
      throw Error("expected " + a["selection_count"].dump() + " selected, found " + std::to_string(doc.selection().size()));
    if (a.contains("sidebar_fraction")) {
      if (!env.ui) throw Error("sidebar_fraction needs the window (not available with --headless)");
      const float want = a["sidebar_fraction"].get<float>(), got = env.ui->sidebar_fraction();
      if (std::abs(got - want) > tol)
        throw Error("the plugin sidebar takes " + std::to_string(got) + " of the column, expected " + a["sidebar_fraction"].dump());
    }
    if (a.contains("dirty") && doc.dirty() != a["dirty"].get<bool>())
      throw Error(std::string("expected the document to be ") + (doc.dirty() ? "saved" : "modified"));
    if (a.contains("undo_top")) {
      auto names = doc.history().undo_names();
      std::string top = names.empty() ? "" : names.back();
      if (top != a["undo_top"].get<std::string>()) throw Error("undo step is '" + top + "', expected " + a["undo_top"].dump());
    }
    if (a.contains("exists") && !a["exists"].get<bool>()) {
      if (a.contains("name") && doc.scene().find_by_name(a["name"].get<std::string>()))
        throw Error("entity '" + a["name"].get<std::string>() + "' should not exist");
    } else if (a.contains("name") || a.contains("id")) {
      EntityId id = resolve(a, env);
      const Transform& t = doc.scene().find(id)->transform;
      auto check = [&](const char* key, const Vec3& got) {
        if (!a.contains(key)) return;
        Vec3 want = vec3(a, key);
        for (int k = 0; k < 3; ++k)
          if (std::fabs(got[k] - want[k]) > tol)
            throw Error(std::string(key) + " is [" + std::to_string(got[0]) + ", " + std::to_string(got[1]) + ", " +
                        std::to_string(got[2]) + "], expected " + a[key].dump());
      };
      check("position", t.position);
      check("rotation", t.rotation);
      check("scale", t.scale);
      if (a.contains("triangles")) {
        const Entity* e = doc.scene().find(id);
        size_t n = e->mesh ? e->mesh->triangles.size() : 0;
        if (n != a["triangles"].get<size_t>()) throw Error("has " + std::to_string(n) + " triangles, expected " + a["triangles"].dump());
      }
    }
  } else if (what == "save") {
    std::string path = a.value("path", doc.path());
    if (path.empty()) throw Error("save needs a path (the scene has none yet)");
    doc.save(path);
  } else if (what == "export") {
    doc.export_file(a.at("path").get<std::string>(), a.value("selection", false));
  } else if (what == "screenshot") {
    return env.screenshot(a.at("path").get<std::string>(), a.value("width", 0), a.value("height", 0),
                          a.value("window", false));
  } else if (what == "camera") {
    if (a.value("frame", false)) {
      Aabb box;
      for (EntityId id : doc.selection().ids()) box.add(doc.scene().world_bounds(id));
      env.camera.frame(box.valid() ? box : doc.scene().scene_bounds());
    }
    std::string view = a.value("view", std::string());
    if (view == "front") env.camera.axis_view(Camera::AxisView::Front);
    else if (view == "right") env.camera.axis_view(Camera::AxisView::Right);
    else if (view == "top") env.camera.axis_view(Camera::AxisView::Top);
    else if (!view.empty()) throw Error("unknown view '" + view + "'");
    if (a.contains("yaw")) env.camera.yaw_deg = a["yaw"].get<float>();
    if (a.contains("pitch")) env.camera.pitch_deg = a["pitch"].get<float>();
    if (a.contains("distance")) env.camera.distance = a["distance"].get<float>();
    if (a.contains("target")) env.camera.target = to_glm(vec3(a, "target"));
  } else if (what == "log") {
    doc.log().info("script: " + a.value("message", std::string()));
  } else if (what == "sleep") {
    double s = a.value("seconds", 0.1);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= s;
  } else if (what == "measure_frames") {
    // Median wall time between frames over N frames (the loop renders the whole editor each frame).
    auto now = std::chrono::steady_clock::now();
    if (frames_ > 0) frame_times_.push_back(std::chrono::duration<double, std::milli>(now - last_frame_).count());
    last_frame_ = now;
    if (frames_ < a.value("frames", 30)) return false;
    std::vector<double> v = frame_times_;
    frame_times_.clear();
    std::sort(v.begin(), v.end());
    double med = v.empty() ? 0 : v[v.size() / 2];
    char buf[160];
    std::snprintf(buf, sizeof buf, "frame time: median %.1f ms over %zu frames (%zu triangles)", med, v.size(),
                  doc.scene().triangle_count());
    doc.log().info(buf);
    std::printf("%s\n", buf);
    std::fflush(stdout);
  } else if (what == "quit") {
    quit_ = true;
  } else {
    throw Error("unknown action '" + what + "'");
  }
  return true;
}

bool ScriptRunner::wait_condition(const json& a, ScriptEnv& env) {
  std::string cond = a.value("condition", std::string());
  double timeout = a.value("timeout_s", 30.0);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  bool ok = false;
  std::string last;
  if (cond == "frames") {
    ok = frames_ >= a.value("value", 1);
  } else if (cond == "entity_count") {
    size_t n = env.doc.scene().size();
    last = std::to_string(n) + " entities";
    ok = a.contains("value") ? n == a["value"].get<size_t>() : n >= a.value("min", size_t{1});
  } else if (cond == "entity_exists") {
    ok = env.doc.scene().find_by_name(a.at("name").get<std::string>()) != nullptr;
  } else if (cond == "tasks_idle") {
    ok = env.host.pending_tasks() == 0 && frames_ > 0;
  } else if (cond == "plugin_command") {
    last = env.host.run_command(a.at("command").get<std::string>(), args_text(a));
    ok = same_result(last, a.at("equals"));
  } else {
    throw Error("unknown condition '" + cond + "' (frames, entity_count, entity_exists, tasks_idle, plugin_command)");
  }
  if (ok) return true;
  if (elapsed > timeout)
    throw Error("timed out after " + std::to_string(timeout) + " s waiting for " + cond + (last.empty() ? "" : " (last: " + last + ")"));
  if (!env.ui) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // headless: do not spin
  return false;
}

bool ScriptRunner::gizmo_drag(const json& a, ScriptEnv& env) {
  if (!env.ui) throw Error("gizmo_drag needs the window (not available with --headless)");
  EditorUI& ui = *env.ui;
  std::string axis_s = a.value("axis", std::string("x"));
  int axis = axis_s == "x" ? 0 : axis_s == "y" ? 1 : axis_s == "z" ? 2 : -1;
  if (axis < 0) throw Error("axis must be x, y or z");
  if (drag_phase_ == 0) {
    if (a.contains("name") || a.contains("id")) env.doc.selection().select(resolve(a, env));
    if (env.doc.selection().empty()) throw Error("nothing selected to drag");
    std::string mode = a.value("mode", std::string("move"));
    ui.gizmo().mode = mode == "rotate" ? GizmoMode::Rotate : mode == "scale" ? GizmoMode::Scale : GizmoMode::Move;
    ui.gizmo().local = a.value("local", false);
    if (a.value("frame", true)) {  // like pressing F: make sure the gizmo is on screen
      Aabb box;
      for (EntityId id : env.doc.selection().ids()) box.add(env.doc.scene().world_bounds(id));
      env.camera.frame(box);
      env.camera.distance *= 2.f;
    }
    drag_changes_ = env.doc.history().change_counter();
    drag_phase_ = 1;  // let one frame lay out the viewport with the new mode
    return false;
  }
  if (drag_phase_ == 1) {
    auto from = ui.gizmo().handle_point(env.doc, ui.camera(), ui.viewport_size(), axis);
    auto unit = ui.gizmo().handle_point_moved(env.doc, ui.camera(), ui.viewport_size(), axis, 1.f);
    if (!from || !unit) throw Error("no gizmo on screen");
    drag_from_ = *from;
    if (a.contains("pixels")) {
      glm::vec2 d = *unit - *from;
      d = glm::length(d) > 1e-3f ? glm::normalize(d) : glm::vec2(1, 0);
      drag_to_ = drag_from_ + d * a["pixels"].get<float>();
    } else if (ui.gizmo().mode == GizmoMode::Move) {  // world units along the axis, exact under perspective
      drag_to_ = *ui.gizmo().handle_point_moved(env.doc, ui.camera(), ui.viewport_size(), axis, a.value("units", 1.f));
    } else {
      drag_to_ = drag_from_ + (*unit - *from) * a.value("units", 1.f);
    }
    drag_window_ = false;
    ui.script_mouse = EditorUI::ScriptMouse{drag_from_, false, false};
    drag_phase_ = 2;
    return false;
  }
  if (!drag_step(ui)) return false;
  if (env.doc.history().change_counter() == drag_changes_) throw Error("the drag did not grab the gizmo handle");
  return true;
}

// Phases 2.. of a drag (phase 1 hovered drag_from_): press, move over kMoveFrames frames, release, then done.
bool ScriptRunner::drag_step(EditorUI& ui) {
  const int kMoveFrames = 6;
  if (drag_phase_ == 2) {
    ui.script_mouse = EditorUI::ScriptMouse{drag_from_, true, drag_window_};
    drag_phase_ = 3;
    return false;
  }
  if (drag_phase_ < 3 + kMoveFrames) {
    float t = float(drag_phase_ - 2) / kMoveFrames;
    ui.script_mouse = EditorUI::ScriptMouse{drag_from_ + (drag_to_ - drag_from_) * t, true, drag_window_};
    ++drag_phase_;
    return false;
  }
  if (drag_phase_ == 3 + kMoveFrames) {
    ui.script_mouse = EditorUI::ScriptMouse{drag_to_, false, drag_window_};
    ++drag_phase_;
    return false;
  }
  ui.script_mouse = std::nullopt;
  drag_phase_ = 0;
  return true;
}

// A left-button drag anywhere in the window (window pixels): panels' edges, splitters, widgets.
bool ScriptRunner::mouse_drag(const json& a, ScriptEnv& env) {
  if (!env.ui) throw Error("mouse_drag needs the window (not available with --headless)");
  if (drag_phase_ == 0) {
    auto point = [&](const char* key) {
      const json& p = a.at(key);
      if (!p.is_array() || p.size() != 2) throw Error(std::string(key) + " must be [x, y] in window pixels");
      return glm::vec2(p[0].get<float>(), p[1].get<float>());
    };
    drag_from_ = point("from");
    drag_to_ = point("to");
    drag_window_ = true;
    env.ui->script_mouse = EditorUI::ScriptMouse{drag_from_, false, true};
    drag_phase_ = 2;
    return false;
  }
  return drag_step(*env.ui);
}

}  // namespace cubeforge::editor
