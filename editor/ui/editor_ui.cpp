// Editor panels, menus, shortcuts and viewport interaction (ImGui 1.86: fixed layout, old key API over GLFW codes).
#include "editor_ui.h"

#include "core/bvh.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <filesystem>

namespace cubeforge::editor {
namespace fs = std::filesystem;

namespace {

constexpr ImGuiWindowFlags kPanelFlags =
    ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings;

// OverlayDraw over plain vectors, handed to plugin overlay hooks.
class OverlayCollector : public OverlayDraw {
 public:
  OverlayCollector(const glm::mat4& vp, glm::vec2 size) : vp_(vp), size_(size) {}
  void ghost_mesh(std::shared_ptr<const Mesh> mesh, const Transform& t, Vec4 rgba) override {
    if (mesh) ghosts.push_back({std::move(mesh), to_matrix(t), {rgba[0], rgba[1], rgba[2], rgba[3]}});
  }
  void line(Vec3 a, Vec3 b, Vec4 c) override {
    glm::vec4 col(c[0], c[1], c[2], c[3]);
    lines.push_back({to_glm(a), col});
    lines.push_back({to_glm(b), col});
  }
  void box(Vec3 mn, Vec3 mx, const Transform& t, Vec4 c) override {
    glm::mat4 m = to_matrix(t);
    glm::vec3 p[8];
    for (int i = 0; i < 8; ++i)
      p[i] = glm::vec3(m * glm::vec4((i & 1) ? mx[0] : mn[0], (i & 2) ? mx[1] : mn[1], (i & 4) ? mx[2] : mn[2], 1.f));
    const int e[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    for (auto& ed : e) line(to_vec3(p[ed[0]]), to_vec3(p[ed[1]]), c);
  }
  std::array<float, 16> view_projection() const override {
    std::array<float, 16> a{};
    const float* p = glm::value_ptr(vp_);
    std::copy(p, p + 16, a.begin());
    return a;
  }
  std::array<float, 2> viewport_size() const override { return {size_.x, size_.y}; }
  std::vector<GhostMesh> ghosts;
  std::vector<LineVertex> lines;

 private:
  glm::mat4 vp_;
  glm::vec2 size_;
};

}  // namespace

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

// ------------------------------------------------------------------------------------------------ explorer
void EditorUI::explorer() {
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(0, menu_h_));
  ImGui::SetNextWindowSize(ImVec2(left_w_, io.DisplaySize.y - menu_h_ - status_h_));
  if (!ImGui::Begin("Explorer", nullptr, kPanelFlags)) {
    ImGui::End();
    return;
  }
  const Scene& scene = doc_.scene();
  // Flatten the visible tree (children after parents, respecting collapsed groups).
  struct Row { EntityId id; int depth; bool has_children; };
  std::vector<Row> rows;
  rows.reserve(scene.size());
  std::unordered_map<EntityId, std::vector<EntityId>> kids;
  for (const auto& e : scene.entities()) kids[e.parent].push_back(e.id);
  std::function<void(EntityId, int)> add = [&](EntityId parent, int depth) {
    auto it = kids.find(parent);
    if (it == kids.end()) return;
    for (EntityId id : it->second) {
      bool has = kids.count(id) > 0;
      rows.push_back({id, depth, has});
      if (has && !collapsed_.count(id)) add(id, depth + 1);
    }
  };
  add(kNoEntity, 0);
  if (rows.empty()) ImGui::TextDisabled("Empty scene. Insert a part or import a mesh.");

  EntityId clicked = kNoEntity;
  bool clicked_ctrl = false;
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(rows.size()));
  while (clip.Step()) {
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const Row& row = rows[i];
      const Entity* e = scene.find(row.id);
      if (!e) continue;
      ImGui::PushID(static_cast<int>(row.id));
      ImGui::Indent(row.depth * 14.f + 1.f);
      if (row.has_children) {
        bool open = !collapsed_.count(row.id);
        if (ImGui::ArrowButton("##exp", open ? ImGuiDir_Down : ImGuiDir_Right)) {
          if (open) collapsed_.insert(row.id);
          else collapsed_.erase(row.id);
        }
      } else {
        ImGui::Dummy(ImVec2(ImGui::GetFrameHeight(), ImGui::GetFrameHeight()));
      }
      ImGui::SameLine();
      bool vis = e->visible;
      if (ImGui::Checkbox("##vis", &vis)) doc_.modify(row.id, vis ? "Show " + e->name : "Hide " + e->name, [&](Entity& x) { x.visible = vis; });
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Visible");
      ImGui::SameLine();
      if (renaming_ == row.id) {
        if (rename_focus_) {
          ImGui::SetKeyboardFocusHere();
          rename_focus_ = false;
        }
        ImGui::SetNextItemWidth(-1);
        if (ImGui::InputText("##rename", rename_buf_, sizeof rename_buf_, ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_AutoSelectAll)) {
          doc_.rename(row.id, rename_buf_);
          renaming_ = kNoEntity;
        } else if (ImGui::IsItemDeactivated()) {
          renaming_ = kNoEntity;
        }
      } else {
        std::string label = (e->is_group ? "[Model] " : "") + e->name;
        if (!e->visible) label += "  (hidden)";
        if (ImGui::Selectable(label.c_str(), doc_.selection().contains(row.id), ImGuiSelectableFlags_AllowDoubleClick)) {
          clicked = row.id;
          clicked_ctrl = io.KeyCtrl;
          if (ImGui::IsMouseDoubleClicked(0)) {
            renaming_ = row.id;
            rename_focus_ = true;
            std::snprintf(rename_buf_, sizeof rename_buf_, "%s", e->name.c_str());
          }
        }
        if (ImGui::BeginPopupContextItem("ctx")) {
          if (!doc_.selection().contains(row.id)) doc_.selection().select(row.id);
          if (ImGui::MenuItem("Rename", "F2")) {
            renaming_ = row.id;
            rename_focus_ = true;
            std::snprintf(rename_buf_, sizeof rename_buf_, "%s", e->name.c_str());
          }
          if (ImGui::MenuItem("Duplicate", "Ctrl+D")) doc_.duplicate_selection();
          if (ImGui::MenuItem("Delete", "Del")) doc_.delete_selection();
          if (ImGui::MenuItem("Group", "Ctrl+G")) doc_.group_selection();
          if (e->is_group && ImGui::MenuItem("Ungroup", "Ctrl+Shift+G")) doc_.ungroup_selection();
          if (!e->is_group && e->mesh && ImGui::MenuItem("Separate parts")) separate_parts();
          if (ImGui::MenuItem(e->visible ? "Hide" : "Show"))
            doc_.modify(row.id, e->visible ? "Hide " + e->name : "Show " + e->name, [](Entity& x) { x.visible = !x.visible; });
          if (ImGui::MenuItem("Frame", "F")) frame_selection();
          ImGui::EndPopup();
        }
      }
      ImGui::Unindent(row.depth * 14.f + 1.f);
      ImGui::PopID();
    }
  }
  clip.End();
  if (clicked != kNoEntity) {
    if (clicked_ctrl) doc_.selection().toggle(clicked);
    else doc_.selection().select(clicked);
  }
  if (ImGui::IsWindowFocused() && !io.WantTextInput && ImGui::IsKeyPressed(GLFW_KEY_F2, false) && doc_.selection().primary()) {
    const Entity* e = scene.find(doc_.selection().primary());
    renaming_ = e->id;
    rename_focus_ = true;
    std::snprintf(rename_buf_, sizeof rename_buf_, "%s", e->name.c_str());
  }
  ImGui::End();
}

// ------------------------------------------------------------------------------------------------ properties
void EditorUI::properties() {
  ImGuiIO& io = ImGui::GetIO();
  float top = menu_h_ + (io.DisplaySize.y - menu_h_ - status_h_) * sidebar_frac_;
  ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x - right_w_, top));
  ImGui::SetNextWindowSize(ImVec2(right_w_, io.DisplaySize.y - status_h_ - top));
  if (!ImGui::Begin("Properties", nullptr, kPanelFlags)) {
    ImGui::End();
    return;
  }
  EntityId id = doc_.selection().primary();
  const Entity* e = doc_.scene().find(id);
  if (!e) {
    ImGui::TextDisabled("Nothing selected.");
    ImGui::End();
    return;
  }
  if (doc_.selection().size() > 1) ImGui::TextDisabled("%zu selected; editing the last one", doc_.selection().size());
  if (name_buf_for_ != id || !ImGui::IsAnyItemActive()) {
    if (name_buf_for_ != id || std::string(name_buf_) != e->name) std::snprintf(name_buf_, sizeof name_buf_, "%s", e->name.c_str());
    name_buf_for_ = id;
  }
  ImGui::PushItemWidth(-90);
  ImGui::InputText("Name", name_buf_, sizeof name_buf_);
  if (ImGui::IsItemDeactivatedAfterEdit()) doc_.rename(id, name_buf_);
  Transform t = e->transform;
  std::string key = "props-" + std::to_string(id);
  bool changed = false;
  changed |= ImGui::DragFloat3("Position", t.position.data(), 0.05f);
  bool pos_done = ImGui::IsItemDeactivatedAfterEdit();
  changed |= ImGui::DragFloat3("Rotation", t.rotation.data(), 0.5f);
  bool rot_done = ImGui::IsItemDeactivatedAfterEdit();
  changed |= ImGui::DragFloat3("Size", t.scale.data(), 0.02f, 0.001f, 10000.f);
  bool scl_done = ImGui::IsItemDeactivatedAfterEdit();
  if (changed) doc_.set_transform(id, t, key);
  if (pos_done || rot_done || scl_done) doc_.history().seal();
  Vec3 col = e->color;
  if (ImGui::ColorEdit3("Color", col.data())) doc_.modify(id, "Colour " + e->name, [&](Entity& x) { x.color = col; }, key + "-color");
  if (ImGui::IsItemDeactivatedAfterEdit()) doc_.history().seal();
  bool anchored = e->anchored, visible = e->visible;
  if (ImGui::Checkbox("Anchored", &anchored)) doc_.modify(id, "Anchored", [&](Entity& x) { x.anchored = anchored; });
  ImGui::SameLine();
  if (ImGui::Checkbox("Visible", &visible)) doc_.modify(id, visible ? "Show" : "Hide", [&](Entity& x) { x.visible = visible; });
  ImGui::PopItemWidth();
  ImGui::Separator();
  if (e->is_group) {
    ImGui::Text("Model with %zu children", doc_.scene().children(id).size());
  } else if (e->mesh) {
    Aabb b = mesh_accel_cache().bounds(e->mesh);
    glm::vec3 ext = b.valid() ? b.extent() * to_glm(e->transform.scale) : glm::vec3(0.f);
    ImGui::Text("Mesh: %zu vertices, %zu triangles", e->mesh->positions.size(), e->mesh->triangles.size());
    ImGui::Text("Size: %.2f x %.2f x %.2f", ext.x, ext.y, ext.z);
    ImGui::Text("Normals: %s   Vertex colours: %s", e->mesh->normals.empty() ? "computed" : "yes",
                e->mesh->colors.empty() ? "no" : "yes");
    if (!e->mesh_source.empty()) ImGui::TextWrapped("Source: %s", e->mesh_source.c_str());
  }
  ImGui::End();
}

// ------------------------------------------------------------------------------------------------ output/status
void EditorUI::output() {
  ImGuiIO& io = ImGui::GetIO();
  float x = left_w_, w = io.DisplaySize.x - left_w_ - right_w_;
  ImGui::SetNextWindowPos(ImVec2(x, io.DisplaySize.y - status_h_ - output_h_));
  ImGui::SetNextWindowSize(ImVec2(w, output_h_));
  if (!ImGui::Begin("Output", nullptr, kPanelFlags)) {
    ImGui::End();
    return;
  }
  if (ImGui::SmallButton("Clear")) doc_.log().clear();
  ImGui::SameLine();
  ImGui::Checkbox("Auto-scroll", &output_autoscroll_);
  ImGui::Separator();
  ImGui::BeginChild("lines", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  auto lines = doc_.log().snapshot();
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(lines.size()));
  while (clip.Step())
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const LogLine& l = lines[i];
      ImVec4 c = l.level == LogLevel::Error ? ImVec4(1.f, 0.45f, 0.4f, 1.f)
                 : l.level == LogLevel::Warning ? ImVec4(1.f, 0.8f, 0.35f, 1.f) : ImVec4(0.85f, 0.85f, 0.85f, 1.f);
      ImGui::TextColored(c, "%7.1fs  %s", l.time_s, l.text.c_str());
    }
  clip.End();
  size_t total = doc_.log().total();
  if (output_autoscroll_ && total != output_seen_) ImGui::SetScrollHereY(1.f);
  output_seen_ = total;
  ImGui::EndChild();
  ImGui::End();
}

void EditorUI::status_bar() {
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(0, io.DisplaySize.y - status_h_));
  ImGui::SetNextWindowSize(ImVec2(io.DisplaySize.x, status_h_));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(8, 3));
  ImGui::Begin("##status", nullptr, kPanelFlags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar);
  const char* mode = gizmo_.mode == GizmoMode::Move ? "Move" : gizmo_.mode == GizmoMode::Rotate ? "Rotate" : "Scale";
  ImGui::Text("%.1f ms/frame | %zu triangles | %zu objects | %zu selected | %s (%s) | %s | %s", frame_ms_,
              doc_.scene().triangle_count(), doc_.scene().size(), doc_.selection().size(), mode,
              gizmo_.local ? "local" : "world", backend_.c_str(), doc_.title().c_str());
  ImGui::End();
  ImGui::PopStyleVar();
}

// ------------------------------------------------------------------------------------------------ plugin sidebar
void EditorUI::plugin_sidebar() {
  ImGuiIO& io = ImGui::GetIO();
  // The sidebar's bottom edge can be dragged (the Properties panel below takes the rest): a generation sidebar
  // needs more room than a fixed half of the column.
  const float avail = io.DisplaySize.y - menu_h_ - status_h_;
  ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x - right_w_, menu_h_));
  ImGui::SetNextWindowSize(ImVec2(right_w_, avail * sidebar_frac_));
  ImGui::SetNextWindowSizeConstraints(ImVec2(right_w_, avail * 0.2f), ImVec2(right_w_, avail * 0.85f));
  const bool open = ImGui::Begin("Plugins###sidebar", nullptr, kPanelFlags & ~ImGuiWindowFlags_NoResize);
  if (avail > 0.f) sidebar_frac_ = std::clamp(ImGui::GetWindowHeight() / avail, 0.2f, 0.85f);
  // remembered once the drag is over (not every frame of it; pixel rounding alone does not count)
  if (settings_ && !ImGui::IsMouseDown(ImGuiMouseButton_Left) && std::abs(sidebar_frac_ - sidebar_frac_saved_) > 0.005f) {
    settings_->set("sidebar_fraction", sidebar_frac_);
    sidebar_frac_saved_ = sidebar_frac_;
  }
  if (!open) {
    ImGui::End();
    return;
  }
  auto panels = host_.panels();  // copy: a plugin may get disabled while drawing
  if (panels.empty()) {
    ImGui::TextDisabled("No plugin panels.");
    size_t failed = 0;
    for (auto& s : host_.statuses()) failed += !s.loaded;
    if (failed) ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "%zu plugin(s) failed to load (see Output)", failed);
  } else if (ImGui::BeginTabBar("plugin_tabs")) {
    for (size_t i = 0; i < panels.size(); ++i) {
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::BeginTabItem(panels[i].title.c_str())) {
        ImGui::BeginChild("panel");
        host_.draw_panel(panels[i]);
        ImGui::EndChild();
        ImGui::EndTabItem();
      }
      ImGui::PopID();
    }
    ImGui::EndTabBar();
  }
  ImGui::End();
}

// ------------------------------------------------------------------------------------------------ viewport
void EditorUI::viewport() {
  ImGuiIO& io = ImGui::GetIO();
  float x = left_w_, w = io.DisplaySize.x - left_w_ - right_w_;
  float h = io.DisplaySize.y - menu_h_ - status_h_ - output_h_;
  ImGui::SetNextWindowPos(ImVec2(x, menu_h_));
  ImGui::SetNextWindowSize(ImVec2(w, h));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
  ImGui::Begin("Viewport", nullptr, kPanelFlags | ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  ImVec2 avail = ImGui::GetContentRegionAvail();
  ImVec2 pos = ImGui::GetCursorScreenPos();
  vp_origin_ = {pos.x, pos.y};
  vp_size_ = {std::max(avail.x, 16.f), std::max(avail.y, 16.f)};
  renderer_.resize(static_cast<int>(vp_size_.x), static_cast<int>(vp_size_.y));

  // Plugin overlays, then the scene.
  glm::mat4 vp = camera_.view_projection(vp_size_.x, vp_size_.y);
  OverlayCollector overlay(vp, vp_size_);
  host_.draw_overlays(overlay);
  renderer_.render(doc_.scene(), doc_.selection(), camera_, options_, overlay.ghosts, overlay.lines);

  ImGui::Image(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(renderer_.color_texture())), ImVec2(vp_size_.x, vp_size_.y),
               ImVec2(0, 1), ImVec2(1, 0));
  bool hovered = ImGui::IsItemHovered();
  viewport_input(hovered, {io.MousePos.x, io.MousePos.y});
  // Mode toolbar in the corner.
  ImGui::SetCursorScreenPos(ImVec2(pos.x + 6, pos.y + 6));
  const char* labels[3] = {"Move (W)", "Rotate (E)", "Scale (R)"};
  for (int i = 0; i < 3; ++i) {
    if (i) ImGui::SameLine();
    bool on = static_cast<int>(gizmo_.mode) == i;
    if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    if (ImGui::SmallButton(labels[i])) gizmo_.mode = static_cast<GizmoMode>(i);
    if (on) ImGui::PopStyleColor();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton(gizmo_.local ? "Local" : "World")) gizmo_.local = !gizmo_.local;
  ImGui::End();
  ImGui::PopStyleVar();
}

void EditorUI::viewport_input(bool hovered, glm::vec2 mouse) {
  ImGuiIO& io = ImGui::GetIO();
  glm::vec2 local = mouse - vp_origin_;
  auto event = [&](ViewportEvent::Type type, MouseButton b) {
    ViewportEvent ev;
    ev.type = type;
    ev.button = b;
    ev.x = local.x;
    ev.y = local.y;
    ev.wheel = io.MouseWheel;
    ev.dragging = ImGui::IsMouseDragging(ImGuiMouseButton_Left) || ImGui::IsMouseDragging(ImGuiMouseButton_Right) ||
                  ImGui::IsMouseDragging(ImGuiMouseButton_Middle);
    ev.ctrl = io.KeyCtrl;
    ev.shift = io.KeyShift;
    ev.alt = io.KeyAlt;
    return host_.dispatch_input(ev);
  };

  // Plugins first (click-to-place etc.).
  bool consumed = false;
  if (hovered) {
    for (int b = 0; b < 3; ++b) {
      if (ImGui::IsMouseClicked(b)) consumed |= event(ViewportEvent::Type::Press, static_cast<MouseButton>(b));
      if (ImGui::IsMouseReleased(b)) consumed |= event(ViewportEvent::Type::Release, static_cast<MouseButton>(b));
    }
    if (io.MouseDelta.x != 0 || io.MouseDelta.y != 0) consumed |= event(ViewportEvent::Type::Move, MouseButton::Left);
    if (io.MouseWheel != 0) consumed |= event(ViewportEvent::Type::Wheel, MouseButton::Left);
  }

  // Gizmo.
  GizmoInput gi;
  gi.origin = vp_origin_;
  gi.size = vp_size_;
  gi.mouse = mouse;
  gi.hovered = hovered && !consumed && !dragging_camera_;
  gi.pressed = hovered && !consumed && ImGui::IsMouseClicked(0) && !io.KeyAlt;
  gi.down = io.MouseDown[0];
  gi.ctrl = io.KeyCtrl;
  bool gizmo_busy = gizmo_.update(doc_, camera_, gi, ImGui::GetWindowDrawList());
  if (consumed) return;

  // Camera: Alt+LMB or MMB orbit, Shift+MMB / Alt+MMB pan, RMB orbit + WASD fly, wheel zoom.
  bool lmb_orbit = io.KeyAlt && ImGui::IsMouseDown(0);
  if (hovered && (ImGui::IsMouseClicked(1) || ImGui::IsMouseClicked(2) || (io.KeyAlt && ImGui::IsMouseClicked(0))))
    dragging_camera_ = true;
  if (dragging_camera_) {
    bool mmb = ImGui::IsMouseDown(2), rmb = ImGui::IsMouseDown(1);
    if (!mmb && !rmb && !lmb_orbit) {
      dragging_camera_ = false;
    } else {
      ImVec2 d = io.MouseDelta;
      if (mmb && (io.KeyShift || io.KeyAlt)) camera_.pan(d.x, d.y, vp_size_.y);
      else camera_.orbit(-d.x * 0.3f, d.y * 0.3f);
      if (rmb) {
        glm::mat4 v = camera_.view();
        glm::vec3 fwd(-v[0][2], -v[1][2], -v[2][2]), right(v[0][0], v[1][0], v[2][0]);
        float speed = std::max(camera_.distance, 2.f) * io.DeltaTime;
        if (ImGui::IsKeyDown(GLFW_KEY_W)) camera_.target += fwd * speed;
        if (ImGui::IsKeyDown(GLFW_KEY_S)) camera_.target -= fwd * speed;
        if (ImGui::IsKeyDown(GLFW_KEY_D)) camera_.target += right * speed;
        if (ImGui::IsKeyDown(GLFW_KEY_A)) camera_.target -= right * speed;
      }
    }
  }
  if (hovered && io.MouseWheel != 0) camera_.zoom(io.MouseWheel);

  // Click to select (press and release without moving; Ctrl toggles).
  if (hovered && ImGui::IsMouseClicked(0) && !io.KeyAlt) {
    press_pos_ = mouse;
    press_in_viewport_ = true;
    gizmo_owned_press_ = gizmo_busy;
  }
  if (press_in_viewport_ && ImGui::IsMouseReleased(0)) {
    press_in_viewport_ = false;
    if (!gizmo_owned_press_ && glm::length(mouse - press_pos_) < 4.f && hovered) {
      RayHit hit = raycast_scene(doc_.scene(), camera_.pixel_ray(local.x, local.y, vp_size_.x, vp_size_.y), false);
      EntityId pick = hit.hit ? hit.entity : kNoEntity;
      // Clicking a part inside a group selects the top-level group (Studio selects the Model), Alt+click the part.
      if (pick != kNoEntity) {
        const Entity* e = doc_.scene().find(pick);
        while (e && e->parent != kNoEntity && !io.KeyShift) e = doc_.scene().find(e->parent);
        if (e) pick = e->id;
      }
      if (io.KeyCtrl) {
        if (pick != kNoEntity) doc_.selection().toggle(pick);
      } else if (pick != kNoEntity) {
        doc_.selection().select(pick);
      } else {
        doc_.selection().clear();
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------ popups
void EditorUI::on_drop(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    if (fs::path(p).extension() == ".cfscene") run_guarded("Open " + p, [&] { doc_.open(p); });
    else run_guarded("Import " + p, [&] { doc_.import_file(p); });
  }
}

void EditorUI::popups() {
  if (prompt_open_) {
    ImGui::OpenPopup("File###pathprompt");
    prompt_open_ = false;
  }
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.4f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(520, 0), ImGuiCond_Appearing);
  if (ImGui::BeginPopupModal("File###pathprompt", nullptr, ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::Text("%s: path", prompt_kind_.c_str());
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    ImGui::SetNextItemWidth(-1);
    bool enter = ImGui::InputText("##path", path_buf_, sizeof path_buf_, ImGuiInputTextFlags_EnterReturnsTrue);
    if (prompt_kind_ == "Import") {
      ImGui::Combo("Up axis", &import_up_, "Auto\0Y up\0Z up\0");
      ImGui::Checkbox("Normalise size to", &import_normalize_);
      ImGui::SameLine();
      ImGui::SetNextItemWidth(80);
      ImGui::DragFloat("units##size", &import_size_, 0.1f, 0.01f, 1000.f);
      ImGui::TextDisabled("glb gltf obj fbx ply stl (or drag files onto the window)");
    }
    if (prompt_kind_ == "Export") {
      ImGui::Checkbox("Selection only", &export_selection_);
      ImGui::TextDisabled(".glb .gltf .obj .ply .stl .fbx (ASCII)");
    }
    bool ok = ImGui::Button("OK", ImVec2(100, 0)) || enter;
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(100, 0)) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) ImGui::CloseCurrentPopup();
    if (ok && path_buf_[0]) {
      std::string p = path_buf_;
      ImGui::CloseCurrentPopup();
      if (prompt_kind_ == "Open") run_guarded("Open " + p, [&] { doc_.open(p); frame_selection(); });
      else if (prompt_kind_ == "Save As") run_guarded("Save " + p, [&] { doc_.save(p); });
      else if (prompt_kind_ == "Import") {
        ImportOptions opt;
        opt.up = import_up_ == 1 ? UpAxis::Y : import_up_ == 2 ? UpAxis::Z : UpAxis::Auto;
        opt.normalize_size = import_normalize_;
        opt.target_size = import_size_;
        opt.base_center = import_normalize_;
        run_guarded("Import " + p, [&] { doc_.import_file(p, opt); frame_selection(); });
      } else if (prompt_kind_ == "Export") run_guarded("Export " + p, [&] { doc_.export_file(p, export_selection_); });
      else if (prompt_kind_ == "Screenshot") run_guarded("Screenshot " + p, [&] { renderer_.save_png(p); doc_.log().info("screenshot " + p); });
    }
    ImGui::EndPopup();
  }

  if (!error_popup_.empty()) ImGui::OpenPopup("Error###err");
  if (ImGui::BeginPopupModal("Error###err", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::TextWrapped("%s", error_popup_.c_str());
    if (ImGui::Button("OK", ImVec2(100, 0)) || ImGui::IsKeyPressed(GLFW_KEY_ENTER)) {
      error_popup_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  if (recovery_popup_) ImGui::OpenPopup("Recover unsaved work?###recovery");
  if (ImGui::BeginPopupModal("Recover unsaved work?###recovery", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::TextUnformatted("Cubeforge did not exit cleanly last time. Restore the autosaved scene?");
    if (ImGui::Button("Recover", ImVec2(120, 0))) {
      run_guarded("Recover", [&] { doc_.load_recovery(); frame_selection(); });
      recovery_popup_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Discard", ImVec2(120, 0))) {
      Document::discard_recovery();
      recovery_popup_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  if (quit_requested_ && !quit_confirmed_) {
    if (!doc_.dirty()) quit_confirmed_ = true;
    else ImGui::OpenPopup("Unsaved changes###quit");
  }
  if (ImGui::BeginPopupModal("Unsaved changes###quit", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::Text("Save changes to %s before quitting?", doc_.path().empty() ? "the untitled scene" : doc_.path().c_str());
    if (ImGui::Button("Save", ImVec2(100, 0))) {
      if (doc_.path().empty()) {
        quit_requested_ = false;
        ImGui::CloseCurrentPopup();
        open_path_prompt("Save As", "scene.cfscene");
      } else {
        bool ok = true;
        try {
          doc_.save(doc_.path());
        } catch (const std::exception& ex) {
          ok = false;
          doc_.log().error(std::string("Save failed: ") + ex.what());
          error_popup_ = std::string("Save failed:\n") + ex.what();
        }
        quit_requested_ = false;
        quit_confirmed_ = ok;
        ImGui::CloseCurrentPopup();
      }
    }
    ImGui::SameLine();
    if (ImGui::Button("Don't save", ImVec2(100, 0))) {
      quit_confirmed_ = true;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(100, 0))) {
      quit_requested_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

}  // namespace cubeforge::editor
