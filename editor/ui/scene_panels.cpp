// The editor's side panels (see editor_ui.h): the explorer (scene tree, selection, rename), properties, the output
// log, the status bar and the plugin sidebar that hosts plugin panels.
#include "editor_ui.h"

#include "core/bvh.h"
#include "panel_style.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

namespace cubeforge::editor {

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

}  // namespace cubeforge::editor
