// Gizmo geometry, hit testing and drag math.
#include "gizmo.h"

#include <imgui.h>

#include <cmath>

namespace cubeforge::editor {
namespace {

const ImU32 kAxisColor[3] = {IM_COL32(230, 70, 70, 255), IM_COL32(90, 210, 90, 255), IM_COL32(80, 130, 240, 255)};
const ImU32 kHotColor = IM_COL32(255, 220, 60, 255);

float dist_to_segment(glm::vec2 p, glm::vec2 a, glm::vec2 b) {
  glm::vec2 ab = b - a;
  float t = glm::dot(p - a, ab) / std::max(glm::dot(ab, ab), 1e-6f);
  t = std::clamp(t, 0.f, 1.f);
  return glm::length(p - (a + ab * t));
}

// Parameter along the line (o + t*axis) closest to the ray (ro + s*rd).
float closest_on_axis(glm::vec3 o, glm::vec3 axis, glm::vec3 ro, glm::vec3 rd) {
  glm::vec3 w = o - ro;
  float a = glm::dot(axis, axis), b = glm::dot(axis, rd), c = glm::dot(rd, rd);
  float d = glm::dot(axis, w), e = glm::dot(rd, w);
  float den = a * c - b * b;
  if (std::fabs(den) < 1e-8f) return 0.f;
  return (b * e - c * d) / den;
}

float snap(float v, float step) { return step > 0 ? std::round(v / step) * step : v; }

}  // namespace

std::optional<Gizmo::Frame> Gizmo::frame(const Document& doc, const Camera& cam, glm::vec2 size) const {
  EntityId id = doc.selection().primary();
  if (id == kNoEntity || !doc.scene().find(id)) return std::nullopt;
  glm::mat4 w = doc.scene().world_matrix(id);
  Frame f;
  f.pivot = glm::vec3(w[3]);
  for (int k = 0; k < 3; ++k) {
    glm::vec3 a(0.f);
    a[k] = 1.f;
    if (local && mode != GizmoMode::Scale) {
      glm::vec3 c(w[k]);
      float l = glm::length(c);
      if (l > 1e-6f) a = c / l;
    }
    if (mode == GizmoMode::Scale) {  // scale is always along the part's own axes
      glm::vec3 c(w[k]);
      float l = glm::length(c);
      if (l > 1e-6f) a = c / l;
    }
    f.axes[k] = a;
  }
  float dist = glm::length(cam.eye() - f.pivot);
  f.length = dist * std::tan(glm::radians(cam.fov_deg) * 0.5f) * 0.28f * (480.f / std::max(size.y, 120.f)) * (size.y / 480.f);
  return f;
}

std::optional<glm::vec2> Gizmo::handle_point(const Document& doc, const Camera& cam, glm::vec2 size, int axis) const {
  auto f = frame(doc, cam, size);
  if (!f || axis < 0 || axis > 2) return std::nullopt;
  float along = mode == GizmoMode::Rotate ? 0.f : 0.8f;
  glm::vec3 p = f->pivot + f->axes[axis] * f->length * along;
  if (mode == GizmoMode::Rotate) {  // a point on the ring
    glm::vec3 u = f->axes[(axis + 1) % 3];
    p = f->pivot + u * f->length;
  }
  glm::vec3 s = cam.project(p, size.x, size.y);
  return glm::vec2(s.x, s.y);
}

std::optional<glm::vec2> Gizmo::handle_point_moved(const Document& doc, const Camera& cam, glm::vec2 size, int axis,
                                                   float units) const {
  auto f = frame(doc, cam, size);
  if (!f || axis < 0 || axis > 2) return std::nullopt;
  glm::vec3 p = f->pivot + f->axes[axis] * (f->length * 0.8f + units);
  glm::vec3 s = cam.project(p, size.x, size.y);
  return glm::vec2(s.x, s.y);
}

int Gizmo::hit_test(const Frame& f, const Camera& cam, const GizmoInput& in) const {
  glm::vec2 m = in.mouse - in.origin;
  auto proj = [&](glm::vec3 p) {
    glm::vec3 s = cam.project(p, in.size.x, in.size.y);
    return glm::vec2(s.x, s.y);
  };
  glm::vec2 c = proj(f.pivot);
  int best = -1;
  float best_d = 9.f;
  for (int k = 0; k < 3; ++k) {
    float d = 1e9f;
    if (mode == GizmoMode::Rotate) {
      glm::vec3 u = f.axes[(k + 1) % 3], v = f.axes[(k + 2) % 3];
      glm::vec2 prev = proj(f.pivot + u * f.length);
      for (int i = 1; i <= 48; ++i) {
        float a = 6.2831853f * i / 48;
        glm::vec2 cur = proj(f.pivot + (u * std::cos(a) + v * std::sin(a)) * f.length);
        d = std::min(d, dist_to_segment(m, prev, cur));
        prev = cur;
      }
    } else {
      d = dist_to_segment(m, c, proj(f.pivot + f.axes[k] * f.length));
    }
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

bool Gizmo::update(Document& doc, const Camera& cam, const GizmoInput& in, ImDrawList* draw) {
  auto f = frame(doc, cam, in.size);
  if (!f) {
    drag_axis_ = -1;
    return false;
  }
  if (drag_axis_ >= 0) {
    if (!in.down) {
      drag_axis_ = -1;
      doc.history().seal();
    } else {
      apply_drag(doc, cam, in);
      f = frame(doc, cam, in.size);
      if (!f) return true;
    }
  }
  hover_axis_ = (drag_axis_ < 0 && in.hovered) ? hit_test(*f, cam, in) : -1;
  if (hover_axis_ >= 0 && in.pressed) {
    drag_axis_ = hover_axis_;
    drag_frame_ = *f;
    drag_start_mouse_ = in.mouse;
    ++drag_counter_;
    drag_start_world_.clear();
    for (EntityId id : doc.selection().roots(doc.scene())) drag_start_world_.push_back({id, doc.scene().world_matrix(id)});
    Ray r = cam.pixel_ray(in.mouse.x - in.origin.x, in.mouse.y - in.origin.y, in.size.x, in.size.y);
    drag_start_param_ = closest_on_axis(f->pivot, f->axes[drag_axis_], to_glm(r.origin), to_glm(r.direction));
    doc.history().seal();
  }

  if (draw) {
    auto proj = [&](glm::vec3 p) {
      glm::vec3 s = cam.project(p, in.size.x, in.size.y);
      return ImVec2(in.origin.x + s.x, in.origin.y + s.y);
    };
    ImVec2 c = proj(f->pivot);
    int hot = drag_axis_ >= 0 ? drag_axis_ : hover_axis_;
    for (int k = 0; k < 3; ++k) {
      ImU32 col = k == hot ? kHotColor : kAxisColor[k];
      if (mode == GizmoMode::Rotate) {
        glm::vec3 u = f->axes[(k + 1) % 3], v = f->axes[(k + 2) % 3];
        ImVec2 pts[49];
        for (int i = 0; i <= 48; ++i) {
          float a = 6.2831853f * i / 48;
          pts[i] = proj(f->pivot + (u * std::cos(a) + v * std::sin(a)) * f->length);
        }
        draw->AddPolyline(pts, 49, col, 0, k == hot ? 3.5f : 2.f);
      } else {
        ImVec2 e = proj(f->pivot + f->axes[k] * f->length);
        draw->AddLine(c, e, col, k == hot ? 4.f : 2.5f);
        if (mode == GizmoMode::Move) {
          glm::vec2 dir(e.x - c.x, e.y - c.y);
          float l = glm::length(dir);
          if (l > 1e-3f) {
            dir /= l;
            glm::vec2 n(-dir.y, dir.x);
            ImVec2 tip(e.x + dir.x * 12, e.y + dir.y * 12);
            draw->AddTriangleFilled(tip, ImVec2(e.x + n.x * 6, e.y + n.y * 6), ImVec2(e.x - n.x * 6, e.y - n.y * 6), col);
          }
        } else {
          draw->AddRectFilled(ImVec2(e.x - 5, e.y - 5), ImVec2(e.x + 5, e.y + 5), col);
        }
      }
    }
    draw->AddCircleFilled(c, 3.5f, IM_COL32(240, 240, 240, 220));
  }
  return drag_axis_ >= 0 || hover_axis_ >= 0;
}

void Gizmo::apply_drag(Document& doc, const Camera& cam, const GizmoInput& in) {
  const Frame& f = drag_frame_;
  glm::vec3 axis = f.axes[drag_axis_];
  std::string key = "gizmo-" + std::to_string(drag_counter_);
  auto set_world = [&](EntityId id, const glm::mat4& world) {
    const Entity* e = doc.scene().find(id);
    if (!e) return;
    Transform t = doc.local_for_parent(world, e->parent);
    doc.set_transform(id, t, key);
  };
  if (mode == GizmoMode::Move) {
    Ray r = cam.pixel_ray(in.mouse.x - in.origin.x, in.mouse.y - in.origin.y, in.size.x, in.size.y);
    float t = closest_on_axis(f.pivot, axis, to_glm(r.origin), to_glm(r.direction));
    float delta = t - drag_start_param_;
    // Guard against the axis pointing at the camera (huge jumps).
    delta = std::clamp(delta, -f.length * 200.f, f.length * 200.f);
    if (in.ctrl) delta = snap(delta, move_snap);
    for (auto& [id, w0] : drag_start_world_) {
      glm::mat4 w = w0;
      w[3] += glm::vec4(axis * delta, 0.f);
      if (in.ctrl && !local) {  // snap the absolute coordinate on that axis
        float& c = w[3][drag_axis_];
        c = snap(c, move_snap);
      }
      set_world(id, w);
    }
  } else if (mode == GizmoMode::Rotate) {
    glm::vec3 cs = cam.project(f.pivot, in.size.x, in.size.y);
    glm::vec2 c(in.origin.x + cs.x, in.origin.y + cs.y);
    float a0 = std::atan2(drag_start_mouse_.y - c.y, drag_start_mouse_.x - c.x);
    float a1 = std::atan2(in.mouse.y - c.y, in.mouse.x - c.x);
    float deg = glm::degrees(a1 - a0);
    // Screen angles grow clockwise (y down); flip when the axis points towards the viewer.
    if (glm::dot(axis, cam.eye() - f.pivot) > 0) deg = -deg;
    if (in.ctrl) deg = snap(deg, rotate_snap);
    glm::mat4 rot = glm::rotate(glm::mat4(1.f), glm::radians(deg), axis);
    for (auto& [id, w0] : drag_start_world_) {
      glm::vec3 p(w0[3]);
      glm::mat4 w = glm::translate(glm::mat4(1.f), p) * rot * glm::translate(glm::mat4(1.f), -p) * w0;
      set_world(id, w);
    }
  } else {
    glm::vec3 cs = cam.project(f.pivot, in.size.x, in.size.y);
    glm::vec3 es = cam.project(f.pivot + axis * f.length, in.size.x, in.size.y);
    glm::vec2 dir(es.x - cs.x, es.y - cs.y);
    float len = std::max(glm::length(dir), 1.f);
    dir /= len;
    float moved = glm::dot(in.mouse - drag_start_mouse_, dir);
    float factor = std::max(0.01f, 1.f + moved / len);
    for (auto& [id, w0] : drag_start_world_) {
      const Entity* e = doc.scene().find(id);
      if (!e) continue;
      Transform t0 = doc.local_for_parent(w0, e->parent);
      Transform t = t0;
      float s = t0.scale[drag_axis_] * factor;
      if (in.ctrl) s = std::max(snap(s, scale_snap), scale_snap);
      t.scale[drag_axis_] = s;
      doc.set_transform(id, t, key);
    }
  }
}

}  // namespace cubeforge::editor
