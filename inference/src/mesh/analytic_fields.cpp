// Owns the analytic test fields (sphere, torus, box, union, intersection) used by tests, benchmarks and demos.
#include <algorithm>
#include <cmath>

#include "cubeforge/analytic_fields.h"

namespace cubeforge {

FieldFn sphere_field(float radius, Vec3 c) {
  return [radius, c](const float* p, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) {
      const float x = p[3 * i] - c[0], y = p[3 * i + 1] - c[1], z = p[3 * i + 2] - c[2];
      out[i] = radius - std::sqrt(x * x + y * y + z * z);
    }
  };
}

FieldFn torus_field(float R, float r) {
  return [R, r](const float* p, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) {
      const float x = p[3 * i], y = p[3 * i + 1], z = p[3 * i + 2];
      const float q = std::sqrt(x * x + z * z) - R;
      out[i] = r - std::sqrt(q * q + y * y);
    }
  };
}

FieldFn box_field(float hx, float hy, float hz) {
  return [hx, hy, hz](const float* p, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i)
      out[i] = std::min({hx - std::fabs(p[3 * i]), hy - std::fabs(p[3 * i + 1]), hz - std::fabs(p[3 * i + 2])});
  };
}

namespace {
template <class Op>
FieldFn combine(FieldFn a, FieldFn b, Op op) {
  return [a = std::move(a), b = std::move(b), op](const float* p, size_t n, float* out) {
    std::vector<float> tmp(n);
    a(p, n, out);
    b(p, n, tmp.data());
    for (size_t i = 0; i < n; ++i) out[i] = op(out[i], tmp[i]);
  };
}
}  // namespace

FieldFn union_field(FieldFn a, FieldFn b) {
  return combine(std::move(a), std::move(b), [](float x, float y) { return std::max(x, y); });
}
FieldFn intersection_field(FieldFn a, FieldFn b) {
  return combine(std::move(a), std::move(b), [](float x, float y) { return std::min(x, y); });
}

}  // namespace cubeforge
