// Connected parts of a mesh (see mesh_parts.h): union-find over corners, with corners at the same position joined.
#include "mesh_parts.h"

#include "math.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>

namespace cubeforge::editor {
namespace {

uint32_t root(std::vector<uint32_t>& p, uint32_t x) {
  while (p[x] != x) {
    p[x] = p[p[x]];  // path halving
    x = p[x];
  }
  return x;
}

void join(std::vector<uint32_t>& p, uint32_t a, uint32_t b) {
  a = root(p, a);
  b = root(p, b);
  if (a != b) p[std::max(a, b)] = std::min(a, b);
}

std::array<uint32_t, 3> position_bits(const Vec3& v) {
  std::array<uint32_t, 3> k;
  std::memcpy(k.data(), v.data(), sizeof(k));
  return k;
}

}  // namespace

std::vector<Mesh> split_parts(const Mesh& m) {
  std::vector<Mesh> parts;
  const size_t n = m.positions.size();
  if (m.triangles.empty() || n == 0) return parts;
  std::vector<uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  // corners at bit-identical positions: sort the vertices by position, join equal neighbours
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const auto ka = position_bits(m.positions[a]), kb = position_bits(m.positions[b]);
    return ka < kb || (ka == kb && a < b);
  });
  for (size_t i = 1; i < n; ++i)
    if (position_bits(m.positions[order[i]]) == position_bits(m.positions[order[i - 1]]))
      join(p, order[i - 1], order[i]);
  for (const auto& t : m.triangles) {
    if (t[0] >= n || t[1] >= n || t[2] >= n) continue;  // a face past the vertex list belongs to no part
    join(p, t[0], t[1]);
    join(p, t[1], t[2]);
  }
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> part_of(n, kNone), local(n, kNone);
  const bool normals = m.normals.size() == n, colors = m.colors.size() == n;
  for (const auto& t : m.triangles) {
    if (t[0] >= n || t[1] >= n || t[2] >= n) continue;
    uint32_t& id = part_of[root(p, t[0])];
    if (id == kNone) {
      id = uint32_t(parts.size());
      parts.emplace_back();
    }
    Mesh& part = parts[id];
    std::array<uint32_t, 3> f;
    for (int i = 0; i < 3; ++i) {
      const uint32_t v = t[i];
      if (local[v] == kNone) {
        local[v] = uint32_t(part.positions.size());
        part.positions.push_back(m.positions[v]);
        if (normals) part.normals.push_back(m.normals[v]);
        if (colors) part.colors.push_back(m.colors[v]);
      }
      f[i] = local[v];
    }
    part.triangles.push_back(f);
  }
  return parts;
}

Vec3 base_centre(const Mesh& m) {
  const Aabb b = mesh_bounds(m);
  if (!b.valid()) return {0.f, 0.f, 0.f};
  const glm::vec3 c = b.center();
  return {c.x, b.min.y, c.z};
}

}  // namespace cubeforge::editor
