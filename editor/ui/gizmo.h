// Transform gizmo of our own (immediate mode, drawn with ImGui's draw list over the viewport image): move arrows,
// rotate rings and scale handles on the X/Y/Z axes, world or local orientation, Ctrl snaps. A drag edits the
// selection through Document::set_transform with one merge key, and is sealed on release: one drag = one undo step.
#pragma once
#include "core/document.h"
#include "render/camera.h"

struct ImDrawList;

namespace cubeforge::editor {

enum class GizmoMode { Move, Rotate, Scale };

struct GizmoInput {
  glm::vec2 origin{0.f};  // viewport top-left in screen pixels
  glm::vec2 size{1.f};    // viewport size in pixels
  glm::vec2 mouse{0.f};   // screen pixels
  bool hovered = false;   // mouse over the viewport image
  bool pressed = false;   // LMB went down this frame
  bool down = false;      // LMB held
  bool ctrl = false;      // snapping
};

class Gizmo {
 public:
  GizmoMode mode = GizmoMode::Move;
  bool local = false;
  float move_snap = 1.f, rotate_snap = 15.f, scale_snap = 0.25f;

  // Draws and handles input. Returns true when the gizmo owns the mouse (hovering a handle or dragging).
  bool update(Document& doc, const Camera& cam, const GizmoInput& in, ImDrawList* draw);
  bool dragging() const { return drag_axis_ >= 0; }
  // Screen point (viewport pixels) on an axis handle, for scripted drags. nullopt without a selection.
  std::optional<glm::vec2> handle_point(const Document& doc, const Camera& cam, glm::vec2 size, int axis) const;
  // Screen point (viewport pixels) of the move/scale handle point shifted by `units` world units along the axis.
  std::optional<glm::vec2> handle_point_moved(const Document& doc, const Camera& cam, glm::vec2 size, int axis,
                                              float units) const;

 private:
  struct Frame {
    glm::vec3 pivot;
    glm::vec3 axes[3];
    float length;  // world length of a handle
  };
  std::optional<Frame> frame(const Document& doc, const Camera& cam, glm::vec2 size) const;
  int hit_test(const Frame& f, const Camera& cam, const GizmoInput& in) const;
  void apply_drag(Document& doc, const Camera& cam, const GizmoInput& in);

  int hover_axis_ = -1;
  int drag_axis_ = -1;
  int drag_counter_ = 0;
  Frame drag_frame_{};
  glm::vec2 drag_start_mouse_{0.f};
  float drag_start_param_ = 0.f;
  std::vector<std::pair<EntityId, glm::mat4>> drag_start_world_;
};

}  // namespace cubeforge::editor
