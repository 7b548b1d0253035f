// Internal to the mesh sources: a face's (b - a) x (c - a) in double (twice its area, along its right-handed normal),
// shared by the surface sampler (mesh_metrics.cpp) and the encoder input's degenerate-face test (encoder_input.cpp).
#pragma once
#include <array>
#include <cstdint>

#include "cubeforge/mesh.h"

namespace cubeforge::mesh_detail {

inline std::array<double, 3> face_cross(const Mesh& m, const std::array<uint32_t, 3>& t) {
  const Vec3 &a = m.positions[t[0]], &b = m.positions[t[1]], &c = m.positions[t[2]];
  const double u[3] = {double(b[0]) - a[0], double(b[1]) - a[1], double(b[2]) - a[2]};
  const double v[3] = {double(c[0]) - a[0], double(c[1]) - a[1], double(c[2]) - a[2]};
  return {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
}

}  // namespace cubeforge::mesh_detail
