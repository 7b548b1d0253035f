// Editor core math: conversions between the plain API types (Vec3, Transform) and glm, plus AABB helpers.
// Header-only; no GL.
#pragma once
#ifndef GLM_ENABLE_EXPERIMENTAL
#define GLM_ENABLE_EXPERIMENTAL
#endif
#include <cubeforge/editor/types.h>

#include <glm/glm.hpp>
#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/type_ptr.hpp>
#include <glm/gtx/euler_angles.hpp>

#include <algorithm>
#include <limits>

namespace cubeforge::editor {

inline glm::vec3 to_glm(const Vec3& v) { return {v[0], v[1], v[2]}; }
inline Vec3 to_vec3(const glm::vec3& v) { return {v.x, v.y, v.z}; }

inline glm::mat4 rotation_matrix(const Vec3& euler_deg) {
  return glm::eulerAngleXYZ(glm::radians(euler_deg[0]), glm::radians(euler_deg[1]), glm::radians(euler_deg[2]));
}

inline Vec3 euler_from_matrix(const glm::mat4& r) {
  float x = 0, y = 0, z = 0;
  glm::extractEulerAngleXYZ(r, x, y, z);
  // + 0.f turns -0 into 0, so that an unrotated result does not show "-0.000" in the Properties panel
  return {glm::degrees(x) + 0.f, glm::degrees(y) + 0.f, glm::degrees(z) + 0.f};
}

inline glm::mat4 to_matrix(const Transform& t) {
  return glm::translate(glm::mat4(1.f), to_glm(t.position)) * rotation_matrix(t.rotation) *
         glm::scale(glm::mat4(1.f), to_glm(t.scale));
}

// Decomposes T*R*S (no shear) back into a Transform.
inline Transform from_matrix(const glm::mat4& m) {
  Transform t;
  t.position = {m[3][0], m[3][1], m[3][2]};
  glm::vec3 c0(m[0]), c1(m[1]), c2(m[2]);
  glm::vec3 s(glm::length(c0), glm::length(c1), glm::length(c2));
  if (glm::dot(glm::cross(c0, c1), c2) < 0.f) s.x = -s.x;
  t.scale = to_vec3(s);
  glm::mat4 r(1.f);
  r[0] = glm::vec4(c0 / (s.x == 0 ? 1.f : s.x), 0);
  r[1] = glm::vec4(c1 / (s.y == 0 ? 1.f : s.y), 0);
  r[2] = glm::vec4(c2 / (s.z == 0 ? 1.f : s.z), 0);
  t.rotation = euler_from_matrix(r);
  return t;
}

struct Aabb {
  glm::vec3 min{std::numeric_limits<float>::max()};
  glm::vec3 max{-std::numeric_limits<float>::max()};
  bool valid() const { return min.x <= max.x; }
  void add(const glm::vec3& p) { min = glm::min(min, p); max = glm::max(max, p); }
  void add(const Aabb& b) { if (b.valid()) { add(b.min); add(b.max); } }
  glm::vec3 center() const { return (min + max) * 0.5f; }
  glm::vec3 extent() const { return max - min; }
  Aabb transformed(const glm::mat4& m) const {
    Aabb out;
    if (!valid()) return out;
    for (int i = 0; i < 8; ++i) {
      glm::vec3 p((i & 1) ? max.x : min.x, (i & 2) ? max.y : min.y, (i & 4) ? max.z : min.z);
      out.add(glm::vec3(m * glm::vec4(p, 1.f)));
    }
    return out;
  }
};

inline Aabb mesh_bounds(const Mesh& m) {
  Aabb b;
  for (const auto& p : m.positions) b.add(to_glm(p));
  return b;
}

// Slab test; returns entry distance or -1 when missed.
inline float ray_aabb(const glm::vec3& o, const glm::vec3& inv_d, const Aabb& b, float tmax) {
  glm::vec3 t0 = (b.min - o) * inv_d, t1 = (b.max - o) * inv_d;
  glm::vec3 lo = glm::min(t0, t1), hi = glm::max(t0, t1);
  float tn = std::max(std::max(lo.x, lo.y), std::max(lo.z, 0.f));
  float tf = std::min(std::min(hi.x, hi.y), std::min(hi.z, tmax));
  return tn <= tf ? tn : -1.f;
}

}  // namespace cubeforge::editor
