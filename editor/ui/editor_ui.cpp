// The editor's ImGui shell (ImGui 1.86: fixed layout, old key API over GLFW codes): the frame and its layout,
// shortcuts, the menu bar, path prompts and guarded commands. The panels are in scene_panels.cpp (explorer,
// properties, output, status bar, plugin sidebar), viewport_panel.cpp (the 3D view and its mouse / key input) and
// popups.cpp (file drops, path prompts, errors).
#include "editor_ui.h"

#include "core/bvh.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <filesystem>

namespace cubeforge::editor {
namespace fs = std::filesystem;

EditorUI::EditorUI(Document& doc, PluginHost& host, Renderer& renderer) : doc_(doc), host_(host), renderer_(renderer) {
  host_.set_viewport_ray([this](float x, float y) { return viewport_ray(x, y); });
}

std::optional<Ray> EditorUI::viewport_ray(float x, float y) const {
  if (vp_size_.x < 2 || vp_size_.y < 2) return std::nullopt;
  return camera_.pixel_ray(x, y, vp_size_.x, vp_size_.y);
}

void EditorUI::run_guarded(const std::string& what, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& ex) {
    doc_.log().error(what + " failed: " + ex.what());
    error_popup_ = what + " failed:\n" + ex.what();
  }
}

void EditorUI::separate_parts() {
  run_guarded("Separate parts", [&] {
    const size_t n = doc_.separate_selection().size();
    if (n == 0) doc_.log().info("Separate parts: no selected mesh has more than one part");
    else doc_.log().info("Separate parts: " + std::to_string(n) + " parts (Ctrl+Z undoes it)");
  });
}

void EditorUI::use_settings(SettingsStore* s) {
  settings_ = s;
  if (s) sidebar_frac_ = sidebar_frac_saved_ = std::clamp(s->get("sidebar_fraction", sidebar_frac_), 0.2f, 0.85f);
}

void EditorUI::apply_script_mouse() {
  if (!script_mouse) return;
  ImGuiIO& io = ImGui::GetIO();
  const glm::vec2 o = script_mouse->window ? glm::vec2(0.f) : glm::vec2(vp_origin_.x, vp_origin_.y);
  io.MousePos = ImVec2(o.x + script_mouse->pos.x, o.y + script_mouse->pos.y);
  io.MouseDown[0] = script_mouse->down;
}

void EditorUI::frame(float dt) {
  frame_ms_ = frame_ms_ * 0.9f + dt * 1000.f * 0.1f;
  layout();
  shortcuts();
  menu_bar();
  explorer();
  viewport();
  output();
  plugin_sidebar();
  properties();
  status_bar();
  popups();
}

void EditorUI::layout() {
  ImGuiIO& io = ImGui::GetIO();
  menu_h_ = ImGui::GetFrameHeight();
  status_h_ = ImGui::GetFrameHeight() + 4.f;
  float w = io.DisplaySize.x, h = io.DisplaySize.y;
  left_w_ = std::clamp(w * 0.2f, 180.f, 300.f);
  right_w_ = std::clamp(w * 0.26f, 220.f, 380.f);
  output_h_ = std::clamp(h * 0.2f, 90.f, 220.f);
}

// ------------------------------------------------------------------------------------------------ shortcuts
void EditorUI::shortcuts() {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  bool ctrl = io.KeyCtrl, shift = io.KeyShift;
  auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
  if (ctrl && pressed(GLFW_KEY_Z) && !shift) doc_.undo();
  if ((ctrl && pressed(GLFW_KEY_Y)) || (ctrl && shift && pressed(GLFW_KEY_Z))) doc_.redo();
  if (ctrl && pressed(GLFW_KEY_D)) doc_.duplicate_selection();
  if (ctrl && pressed(GLFW_KEY_G)) shift ? doc_.ungroup_selection() : (void)doc_.group_selection();
  if (ctrl && pressed(GLFW_KEY_S)) {
    if (doc_.path().empty() || shift) open_path_prompt("Save As", doc_.path().empty() ? "scene.cfscene" : doc_.path());
    else run_guarded("Save", [&] { doc_.save(doc_.path()); });
  }
  if (ctrl && pressed(GLFW_KEY_O)) open_path_prompt("Open", "");
  if (ctrl && pressed(GLFW_KEY_I)) open_path_prompt("Import", "");
  if (ctrl && pressed(GLFW_KEY_L)) gizmo_.local = !gizmo_.local;
  if (ctrl && pressed(GLFW_KEY_A)) {
    std::vector<EntityId> all;
    for (auto& e : doc_.scene().entities())
      if (e.parent == kNoEntity) all.push_back(e.id);
    doc_.selection().set(all);
  }
  if (pressed(GLFW_KEY_DELETE)) doc_.delete_selection();
  if (ctrl) return;
  // Single keys act when the mouse is not busy dragging the camera with RMB (WASD fly).
  if (!(ImGui::IsMouseDown(ImGuiMouseButton_Right) && dragging_camera_)) {
    if (pressed(GLFW_KEY_W)) gizmo_.mode = GizmoMode::Move;
    if (pressed(GLFW_KEY_E)) gizmo_.mode = GizmoMode::Rotate;
    if (pressed(GLFW_KEY_R)) gizmo_.mode = GizmoMode::Scale;
  }
  if (pressed(GLFW_KEY_F)) frame_selection();
  if (pressed(GLFW_KEY_KP_1)) camera_.axis_view(Camera::AxisView::Front);
  if (pressed(GLFW_KEY_KP_3)) camera_.axis_view(Camera::AxisView::Right);
  if (pressed(GLFW_KEY_KP_7)) camera_.axis_view(Camera::AxisView::Top);
  if (pressed(GLFW_KEY_ESCAPE)) doc_.selection().clear();
}

void EditorUI::frame_selection() {
  Aabb box;
  for (EntityId id : doc_.selection().ids()) box.add(doc_.scene().world_bounds(id));
  if (!box.valid()) box = doc_.scene().scene_bounds();
  if (!box.valid()) {
    box.add(glm::vec3(-4.f, 0.f, -4.f));
    box.add(glm::vec3(4.f, 2.f, 4.f));
  }
  camera_.frame(box);
}

Vec3 EditorUI::placement_point() {
  // Where the viewport centre ray hits (ground or a part); the origin when it looks at the sky.
  RayHit h = raycast_scene(doc_.scene(), camera_.pixel_ray(vp_size_.x * 0.5f, vp_size_.y * 0.5f, vp_size_.x, vp_size_.y), true);
  if (!h.hit || h.distance > 200.f) return {0.f, 0.f, 0.f};
  return h.point;
}

void EditorUI::open_path_prompt(const std::string& kind, const std::string& initial) {
  prompt_kind_ = kind;
  std::snprintf(path_buf_, sizeof path_buf_, "%s", initial.c_str());
  prompt_open_ = true;
}

// ------------------------------------------------------------------------------------------------ menu bar
void EditorUI::plugin_menu_items(const std::string& menu) {
  for (const auto& item : host_.menu_items()) {
    auto slash = item.path.find('/');
    if (item.path.substr(0, slash) != menu) continue;
    std::string rest = item.path.substr(slash + 1);
    // One submenu level: "Plugins/AI/Generate".
    auto sub = rest.find('/');
    bool enabled = host_.menu_item_enabled(item);
    if (sub == std::string::npos) {
      if (ImGui::MenuItem(rest.c_str(), item.shortcut.empty() ? nullptr : item.shortcut.c_str(), false, enabled)) {
        host_.run_menu_item(item);
        return;  // the registry may have changed
      }
    } else if (ImGui::BeginMenu(rest.substr(0, sub).c_str())) {
      bool clicked = ImGui::MenuItem(rest.substr(sub + 1).c_str(), item.shortcut.empty() ? nullptr : item.shortcut.c_str(), false, enabled);
      ImGui::EndMenu();
      if (clicked) {
        host_.run_menu_item(item);
        return;
      }
    }
  }
}

void EditorUI::menu_bar() {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("New")) doc_.new_scene();
    if (ImGui::MenuItem("Open...", "Ctrl+O")) open_path_prompt("Open", "");
    if (ImGui::MenuItem("Save", "Ctrl+S")) {
      if (doc_.path().empty()) open_path_prompt("Save As", "scene.cfscene");
      else run_guarded("Save", [&] { doc_.save(doc_.path()); });
    }
    if (ImGui::MenuItem("Save As...", "Ctrl+Shift+S")) open_path_prompt("Save As", doc_.path().empty() ? "scene.cfscene" : doc_.path());
    ImGui::Separator();
    if (ImGui::MenuItem("Import Mesh...", "Ctrl+I")) open_path_prompt("Import", "");
    if (ImGui::MenuItem("Export Selection...", nullptr, false, !doc_.selection().empty())) {
      export_selection_ = true;
      open_path_prompt("Export", "selection.glb");
    }
    if (ImGui::MenuItem("Export Scene...")) {
      export_selection_ = false;
      open_path_prompt("Export", "scene.glb");
    }
    if (ImGui::MenuItem("Screenshot...")) open_path_prompt("Screenshot", "viewport.png");
    plugin_menu_items("File");
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) request_quit();
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Edit")) {
    auto undo = doc_.history().undo_names();
    auto redo = doc_.history().redo_names();
    std::string u = "Undo" + (undo.empty() ? std::string() : " " + undo.back());
    std::string r = "Redo" + (redo.empty() ? std::string() : " " + redo.front());
    if (ImGui::MenuItem(u.c_str(), "Ctrl+Z", false, doc_.history().can_undo())) doc_.undo();
    if (ImGui::MenuItem(r.c_str(), "Ctrl+Y", false, doc_.history().can_redo())) doc_.redo();
    if (ImGui::BeginMenu("History", !undo.empty() || !redo.empty())) {
      // Newest first; clicking a step undoes/redoes up to it.
      for (size_t i = redo.size(); i-- > 0;) {
        ImGui::PushID(static_cast<int>(1000000 + i));
        if (ImGui::MenuItem(redo[i].c_str(), nullptr, false)) for (size_t k = 0; k <= i; ++k) doc_.redo();
        ImGui::PopID();
      }
      for (size_t i = undo.size(); i-- > 0;) {
        ImGui::PushID(static_cast<int>(i));
        if (ImGui::MenuItem(undo[i].c_str(), nullptr, i + 1 == undo.size()))
          for (size_t k = i + 1; k < undo.size(); ++k) doc_.undo();
        ImGui::PopID();
      }
      ImGui::EndMenu();
    }
    ImGui::Separator();
    bool sel = !doc_.selection().empty();
    if (ImGui::MenuItem("Duplicate", "Ctrl+D", false, sel)) doc_.duplicate_selection();
    if (ImGui::MenuItem("Delete", "Del", false, sel)) doc_.delete_selection();
    if (ImGui::MenuItem("Group", "Ctrl+G", false, sel)) doc_.group_selection();
    if (ImGui::MenuItem("Ungroup", "Ctrl+Shift+G", false, sel)) doc_.ungroup_selection();
    if (ImGui::MenuItem("Separate parts", nullptr, false, sel)) separate_parts();
    if (ImGui::MenuItem("Select All", "Ctrl+A")) {
      std::vector<EntityId> all;
      for (auto& e : doc_.scene().entities())
        if (e.parent == kNoEntity) all.push_back(e.id);
      doc_.selection().set(all);
    }
    plugin_menu_items("Edit");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Wireframe overlay", nullptr, &options_.wireframe);
    ImGui::MenuItem("Grid", nullptr, &options_.grid);
    ImGui::MenuItem("Axes", nullptr, &options_.axes);
    ImGui::Separator();
    if (ImGui::MenuItem("Frame selection", "F")) frame_selection();
    if (ImGui::MenuItem("Front", "Num 1")) camera_.axis_view(Camera::AxisView::Front);
    if (ImGui::MenuItem("Right", "Num 3")) camera_.axis_view(Camera::AxisView::Right);
    if (ImGui::MenuItem("Top", "Num 7")) camera_.axis_view(Camera::AxisView::Top);
    ImGui::Separator();
    if (ImGui::MenuItem("Move", "W", gizmo_.mode == GizmoMode::Move)) gizmo_.mode = GizmoMode::Move;
    if (ImGui::MenuItem("Rotate", "E", gizmo_.mode == GizmoMode::Rotate)) gizmo_.mode = GizmoMode::Rotate;
    if (ImGui::MenuItem("Scale", "R", gizmo_.mode == GizmoMode::Scale)) gizmo_.mode = GizmoMode::Scale;
    ImGui::MenuItem("Local space", "Ctrl+L", &gizmo_.local);
    ImGui::DragFloat("Move snap", &gizmo_.move_snap, 0.05f, 0.01f, 100.f);
    ImGui::DragFloat("Rotate snap", &gizmo_.rotate_snap, 1.f, 1.f, 180.f);
    plugin_menu_items("View");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Insert")) {
    for (PartKind k : {PartKind::Block, PartKind::Sphere, PartKind::Cylinder, PartKind::Wedge})
      if (ImGui::MenuItem(part_name(k))) doc_.insert_part(k, placement_point());
    plugin_menu_items("Insert");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Plugins")) {
    for (const auto& st : host_.statuses()) {
      std::string label = (st.name.empty() ? fs::path(st.file).filename().string() : st.name) +
                          (st.loaded ? (st.disabled ? "  (disabled)" : "  (loaded)") : "  (failed)");
      ImGui::MenuItem(label.c_str(), nullptr, false, false);
      if (!st.error.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", st.error.c_str());
    }
    if (host_.statuses().empty()) ImGui::MenuItem("(no plugins found)", nullptr, false, false);
    ImGui::Separator();
    plugin_menu_items("Plugins");
    ImGui::EndMenu();
  }
  // Menus that only plugins use.
  std::vector<std::string> extra;
  for (const auto& item : host_.menu_items()) {
    std::string top = item.path.substr(0, item.path.find('/'));
    if (top != "File" && top != "Edit" && top != "View" && top != "Insert" && top != "Plugins" &&
        std::find(extra.begin(), extra.end(), top) == extra.end())
      extra.push_back(top);
  }
  for (auto& top : extra)
    if (ImGui::BeginMenu(top.c_str())) {
      plugin_menu_items(top);
      ImGui::EndMenu();
    }
  ImGui::EndMainMenuBar();
}

}  // namespace cubeforge::editor
