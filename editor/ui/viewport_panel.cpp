// The editor's viewport panel (see editor_ui.h): the rendered scene, plugin overlays (collected through
// OverlayDraw), picking, the gizmo and the camera's mouse / key navigation.
#include "editor_ui.h"

#include "core/bvh.h"
#include "panel_style.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

namespace cubeforge::editor {

namespace {

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

}  // namespace cubeforge::editor
