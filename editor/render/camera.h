// Orbit camera of the viewport (no GL): target + yaw/pitch/distance, perspective projection, pixel rays, framing
// and axis views. Conventions from docs: Alt+LMB/MMB orbit, Shift+MMB pan, wheel zoom, F frame, numpad 1/3/7.
#pragma once
#include "core/math.h"

namespace cubeforge::editor {

struct Camera {
  glm::vec3 target{0.f, 0.f, 0.f};
  float yaw_deg = 35.f;    // around +Y; 0 looks from +Z towards -Z
  float pitch_deg = 25.f;  // above the horizon
  float distance = 18.f;
  float fov_deg = 50.f;
  float near_plane = 0.05f, far_plane = 2000.f;

  glm::vec3 eye() const;
  glm::mat4 view() const;
  glm::mat4 projection(float aspect) const;
  glm::mat4 view_projection(float width, float height) const;
  // Ray through pixel (x, y) of a width x height image, origin top-left.
  Ray pixel_ray(float x, float y, float width, float height) const;
  // Screen position of a world point (pixels, origin top-left); z < 0 or > 1 when clipped.
  glm::vec3 project(const glm::vec3& world, float width, float height) const;

  void orbit(float dyaw_deg, float dpitch_deg);
  void pan(float dx_px, float dy_px, float height_px);
  void zoom(float wheel_steps);
  void frame(const Aabb& box);
  enum class AxisView { Front, Right, Top };
  void axis_view(AxisView v);
};

}  // namespace cubeforge::editor
