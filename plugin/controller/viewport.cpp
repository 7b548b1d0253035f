// The AI sidebar's viewport side (see controller.h): where the next object lands (the spot: a click, the view's
// centre), the bounding-box gizmo and its handles, the overlay (ghost preview, spot marker, box) and placing a mesh
// into the scene as one undoable step.
#include "controller/controller.h"

#include "appearance/prompt_colour.h"

#include <algorithm>
#include <cmath>

namespace cubeforge::ai {

using editor::EntityId;
using editor::kNoEntity;

namespace {
constexpr Vec3 kPlacedColor{0.78f, 0.80f, 0.84f};
constexpr editor::Vec4 kGhostColor{0.35f, 0.75f, 1.0f, 0.35f};
constexpr editor::Vec4 kSpotColor{1.0f, 0.62f, 0.15f, 0.95f};
constexpr editor::Vec4 kBoxColor{1.0f, 0.85f, 0.3f, 0.8f};
}  // namespace

void Controller::default_spot() {
  if (viewport_size_[0] > 0 && viewport_size_[1] > 0) {
    editor::RayHit h = host_.raycast_viewport(viewport_size_[0] * 0.5f, viewport_size_[1] * 0.5f, true);
    if (h.hit) {
      spot_ = h.point;
      return;
    }
  }
  spot_ = {0.f, 0.f, 0.f};
}

void Controller::set_spot(const Vec3& p, EntityId on) {
  spot_ = p;
  spot_chosen_ = true;
  spot_entity_ = on;
  for (auto& [id, v] : jobs_) v.spot = p;  // running jobs land where the user points now
}

bool Controller::pick_at(float x, float y) {
  editor::RayHit h = host_.raycast_viewport(x, y, true);
  if (!h.hit) return false;
  set_spot(h.point, h.entity);
  return true;
}

void Controller::arm_pick(const std::string& history_id) {
  picking_ = true;
  pick_history_ = history_id;
  hover_.reset();
}

bool Controller::bbox_gizmo_active() const {
  return form_.use_bbox && model_takes_bbox() && !busy() && !picking_ && have_camera_;
}

Vec3 Controller::bbox_handle(int i) const {
  const auto& b = form_.bbox;
  const Vec3& p = spot_;
  if (i == 0) return {p[0] + b[0] / 2, p[1] + b[1] / 2, p[2]};
  if (i == 1) return {p[0], p[1] + b[1], p[2]};
  return {p[0], p[1] + b[1] / 2, p[2] + b[2] / 2};
}

std::optional<std::array<float, 2>> Controller::project(const Vec3& p) const {
  if (!have_camera_) return std::nullopt;
  const auto& m = view_proj_;  // column-major
  const float cx = m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12];
  const float cy = m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13];
  const float cw = m[3] * p[0] + m[7] * p[1] + m[11] * p[2] + m[15];
  if (cw <= 1e-6f) return std::nullopt;
  return std::array<float, 2>{(cx / cw * 0.5f + 0.5f) * viewport_size_[0], (0.5f - cy / cw * 0.5f) * viewport_size_[1]};
}

int Controller::hit_handle(float x, float y) const {
  int best = -1;
  float best_d = 10.f;  // pixels
  for (int i = 0; i < 3; ++i) {
    auto s = project(bbox_handle(i));
    if (!s) continue;
    const float d = std::hypot((*s)[0] - x, (*s)[1] - y);
    if (d < best_d) {
      best_d = d;
      best = i;
    }
  }
  return best;
}

editor::ViewportReply Controller::on_viewport(const editor::ViewportEvent& ev) {
  using editor::ViewportEvent;
  using editor::ViewportReply;
  // Box gizmo: drag a handle to resize the requested bounding box.
  if (gizmo_drag_ >= 0) {
    if (ev.type == ViewportEvent::Type::Move) {
      const float dx = ev.x - gizmo_from_[0], dy = ev.y - gizmo_from_[1];
      const float len2 = gizmo_dir_[0] * gizmo_dir_[0] + gizmo_dir_[1] * gizmo_dir_[1];
      const float d = len2 > 1e-6f ? (dx * gizmo_dir_[0] + dy * gizmo_dir_[1]) / len2 : 0.f;  // world units
      const int a = gizmo_drag_;
      const float grow = a == 1 ? d : 2.f * d;  // x/z handles sit on the half-width
      const float side = std::clamp(gizmo_start_[a] + grow, kBBoxMin, kBBoxMax);
      if (form_.aspect_lock) {
        const float k = side / gizmo_start_[a];
        for (int i = 0; i < 3; ++i) form_.bbox[i] = std::clamp(gizmo_start_[i] * k, kBBoxMin, kBBoxMax);
      } else {
        form_.bbox[a] = side;
      }
      form_changed();
      return ViewportReply::Consumed;
    }
    if (ev.type == ViewportEvent::Type::Release) {
      gizmo_drag_ = -1;
      return ViewportReply::Consumed;
    }
    return ViewportReply::Consumed;
  }
  if (bbox_gizmo_active()) {
    const int h = hit_handle(ev.x, ev.y);
    if (ev.type == ViewportEvent::Type::Move) gizmo_hover_ = h;
    if (ev.type == ViewportEvent::Type::Press && ev.button == editor::MouseButton::Left && !ev.alt && h >= 0) {
      auto s0 = project(bbox_handle(h));
      Vec3 q = bbox_handle(h);
      q[h] += 1.f;
      auto s1 = project(q);
      if (s0 && s1) {
        gizmo_drag_ = h;
        gizmo_from_ = {ev.x, ev.y};
        gizmo_dir_ = {(*s1)[0] - (*s0)[0], (*s1)[1] - (*s0)[1]};
        gizmo_start_ = form_.bbox;
        return ViewportReply::Consumed;
      }
    }
  } else {
    gizmo_hover_ = -1;
  }
  if (ev.type == ViewportEvent::Type::Release && ev.button == editor::MouseButton::Left && swallow_release_) {
    swallow_release_ = false;
    return ViewportReply::Consumed;
  }
  if (!picking_) return ViewportReply::Ignored;
  if (ev.type == ViewportEvent::Type::Move) {
    editor::RayHit h = host_.raycast_viewport(ev.x, ev.y, true);
    if (h.hit)
      hover_ = h.point;
    else
      hover_.reset();
    return ViewportReply::Ignored;
  }
  if (ev.type == ViewportEvent::Type::Press && ev.button == editor::MouseButton::Right) {
    disarm_pick();
    return ViewportReply::Consumed;
  }
  if (ev.type == ViewportEvent::Type::Press && ev.button == editor::MouseButton::Left && !ev.alt) {
    swallow_release_ = true;
    editor::RayHit h = host_.raycast_viewport(ev.x, ev.y, true);
    if (!h.hit) {
      message(MsgLevel::Warning, "Nothing under the cursor: click on the ground or on an object.");
      return ViewportReply::Consumed;
    }
    const std::string hist = pick_history_;
    disarm_pick();
    if (!hist.empty())
      history_place(hist, h.point);
    else
      set_spot(h.point, h.entity);
    return ViewportReply::Consumed;
  }
  return ViewportReply::Ignored;
}

void Controller::draw_overlay(editor::OverlayDraw& d) {
  viewport_size_ = d.viewport_size();
  view_proj_ = d.view_projection();
  have_camera_ = viewport_size_[0] > 1 && viewport_size_[1] > 1 &&
                 std::any_of(view_proj_.begin(), view_proj_.end(), [](float v) { return v != 0.f; });
  const JobView* j = current();
  if (j && j->preview && !j->preview->empty()) {
    const float s = fit_scale(j->preview_bounds.size(), j->spec ? j->spec->request.bbox : std::nullopt);
    const auto colour = j->spec ? j->spec->vertex_colour : std::nullopt;
    d.ghost_mesh(j->preview, ghost_transform(j->preview_bounds, s, j->spot), ghost_tint(colour, kGhostColor));
  }
  std::optional<Vec3> marker;
  if (picking_ && hover_)
    marker = hover_;
  else if (j)
    marker = j->spot;
  else if (spot_chosen_ || picking_ || (form_.use_bbox && model_takes_bbox()))
    marker = spot_;
  if (!marker) return;
  const Vec3 p = *marker;
  const float r = 0.25f;
  d.line({p[0] - r, p[1], p[2]}, {p[0] + r, p[1], p[2]}, kSpotColor);
  d.line({p[0], p[1], p[2] - r}, {p[0], p[1], p[2] + r}, kSpotColor);
  d.line({p[0], p[1], p[2]}, {p[0], p[1] + 2 * r, p[2]}, kSpotColor);
  const bool bbox = j ? (j->spec && j->spec->request.bbox) : (form_.use_bbox && model_takes_bbox());
  if (bbox) {
    const auto b = j ? *j->spec->request.bbox : form_.bbox;
    editor::Transform t;
    t.position = p;
    d.box({-b[0] / 2, 0.f, -b[2] / 2}, {b[0] / 2, b[1], b[2] / 2}, t, kBoxColor);
  }
  if (bbox_gizmo_active() && !j) {
    const editor::Vec4 axis_col[3] = {{1.f, 0.3f, 0.3f, 1.f}, {0.3f, 1.f, 0.3f, 1.f}, {0.35f, 0.55f, 1.f, 1.f}};
    const float r = 0.06f * std::max({form_.bbox[0], form_.bbox[1], form_.bbox[2]});
    for (int i = 0; i < 3; ++i) {
      editor::Transform t;
      t.position = bbox_handle(i);
      const float k = (i == gizmo_hover_ || i == gizmo_drag_) ? 1.8f : 1.f;
      d.box({-r * k, -r * k, -r * k}, {r * k, r * k, r * k}, t, axis_col[i]);
    }
  }
}

EntityId Controller::place(std::shared_ptr<const Mesh> mesh, const std::string& prompt, const Vec3& spot,
                           const std::string& step_prefix) {
  if (!mesh || mesh->empty()) {
    message(MsgLevel::Error, "Nothing to place: the mesh is empty.");
    return kNoEntity;
  }
  std::string name = short_prompt(prompt, 32);
  if (name.empty()) name = "Generated";
  EntityId id = kNoEntity;
  editor::Transform t;
  t.position = clean_spot(spot);
  const bool ok = host_.apply(step_prefix + short_prompt(prompt, 48), [&](editor::ChangeSet& cs) {
    id = cs.add_mesh(name, mesh, t, kPlacedColor);
    cs.select({id});
  });
  if (!ok) {
    message(MsgLevel::Error, "Placing '" + name + "' failed (see the Output panel).");
    return kNoEntity;
  }
  return id;
}

}  // namespace cubeforge::ai
