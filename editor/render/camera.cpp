// Orbit camera math.
#include "camera.h"

#include <algorithm>
#include <cmath>

namespace cubeforge::editor {

glm::vec3 Camera::eye() const {
  float y = glm::radians(yaw_deg), p = glm::radians(pitch_deg);
  return target + distance * glm::vec3(std::cos(p) * std::sin(y), std::sin(p), std::cos(p) * std::cos(y));
}

glm::mat4 Camera::view() const {
  glm::vec3 up(0, 1, 0);
  if (std::fabs(pitch_deg) > 89.f) up = glm::vec3(-std::sin(glm::radians(yaw_deg)), 0, -std::cos(glm::radians(yaw_deg)));
  return glm::lookAt(eye(), target, up);
}

glm::mat4 Camera::projection(float aspect) const {
  return glm::perspective(glm::radians(fov_deg), std::max(aspect, 1e-3f), near_plane, far_plane);
}

glm::mat4 Camera::view_projection(float width, float height) const {
  return projection(width / std::max(height, 1.f)) * view();
}

Ray Camera::pixel_ray(float x, float y, float width, float height) const {
  glm::mat4 inv = glm::inverse(view_projection(width, height));
  float nx = 2.f * x / std::max(width, 1.f) - 1.f, ny = 1.f - 2.f * y / std::max(height, 1.f);
  glm::vec4 a = inv * glm::vec4(nx, ny, -1.f, 1.f), b = inv * glm::vec4(nx, ny, 1.f, 1.f);
  glm::vec3 pa = glm::vec3(a) / a.w, pb = glm::vec3(b) / b.w;
  Ray r;
  r.origin = to_vec3(pa);
  r.direction = to_vec3(glm::normalize(pb - pa));
  return r;
}

glm::vec3 Camera::project(const glm::vec3& world, float width, float height) const {
  glm::vec4 c = view_projection(width, height) * glm::vec4(world, 1.f);
  if (c.w <= 1e-6f) return {0.f, 0.f, -1.f};
  glm::vec3 ndc = glm::vec3(c) / c.w;
  return {(ndc.x * 0.5f + 0.5f) * width, (0.5f - ndc.y * 0.5f) * height, ndc.z * 0.5f + 0.5f};
}

void Camera::orbit(float dyaw, float dpitch) {
  yaw_deg = std::fmod(yaw_deg + dyaw, 360.f);
  pitch_deg = std::clamp(pitch_deg + dpitch, -89.5f, 89.5f);
}

void Camera::pan(float dx, float dy, float height) {
  glm::mat4 v = view();
  glm::vec3 right(v[0][0], v[1][0], v[2][0]), up(v[0][1], v[1][1], v[2][1]);
  float world_per_px = 2.f * distance * std::tan(glm::radians(fov_deg) * 0.5f) / std::max(height, 1.f);
  target += (-dx * right + dy * up) * world_per_px;
}

void Camera::zoom(float steps) { distance = std::clamp(distance * std::pow(0.88f, steps), 0.1f, 1500.f); }

void Camera::frame(const Aabb& box) {
  if (!box.valid()) return;
  target = box.center();
  float radius = std::max(glm::length(box.extent()) * 0.5f, 0.25f);
  distance = radius / std::sin(glm::radians(fov_deg) * 0.5f) * 1.1f;
}

void Camera::axis_view(AxisView v) {
  switch (v) {
    case AxisView::Front: yaw_deg = 0.f; pitch_deg = 0.f; break;
    case AxisView::Right: yaw_deg = 90.f; pitch_deg = 0.f; break;
    case AxisView::Top: yaw_deg = 0.f; pitch_deg = 89.5f; break;
  }
}

}  // namespace cubeforge::editor
