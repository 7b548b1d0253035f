// Part mesh generators (unit size, centred).
#include "primitives.h"

#include <cmath>
#include <mutex>

namespace cubeforge::editor {
namespace {

void add_quad(Mesh& m, Vec3 a, Vec3 b, Vec3 c, Vec3 d, Vec3 n) {
  auto base = static_cast<uint32_t>(m.positions.size());
  for (const Vec3& p : {a, b, c, d}) {
    m.positions.push_back(p);
    m.normals.push_back(n);
  }
  m.triangles.push_back({base, base + 1, base + 2});
  m.triangles.push_back({base, base + 2, base + 3});
}

void add_tri(Mesh& m, Vec3 a, Vec3 b, Vec3 c, Vec3 n) {
  auto base = static_cast<uint32_t>(m.positions.size());
  for (const Vec3& p : {a, b, c}) {
    m.positions.push_back(p);
    m.normals.push_back(n);
  }
  m.triangles.push_back({base, base + 1, base + 2});
}

Mesh block() {
  Mesh m;
  const float h = 0.5f;
  add_quad(m, {-h, -h, h}, {h, -h, h}, {h, h, h}, {-h, h, h}, {0, 0, 1});
  add_quad(m, {h, -h, -h}, {-h, -h, -h}, {-h, h, -h}, {h, h, -h}, {0, 0, -1});
  add_quad(m, {h, -h, h}, {h, -h, -h}, {h, h, -h}, {h, h, h}, {1, 0, 0});
  add_quad(m, {-h, -h, -h}, {-h, -h, h}, {-h, h, h}, {-h, h, -h}, {-1, 0, 0});
  add_quad(m, {-h, h, h}, {h, h, h}, {h, h, -h}, {-h, h, -h}, {0, 1, 0});
  add_quad(m, {-h, -h, -h}, {h, -h, -h}, {h, -h, h}, {-h, -h, h}, {0, -1, 0});
  return m;
}

// Wedge: a block cut along the diagonal; full height at -z, slope down to +z (Studio's wedge).
Mesh wedge() {
  Mesh m;
  const float h = 0.5f;
  const float s = 1.f / std::sqrt(2.f);
  add_quad(m, {h, h, -h}, {-h, h, -h}, {-h, -h, h}, {h, -h, h}, {0, s, s});                // slope
  add_quad(m, {h, -h, -h}, {-h, -h, -h}, {-h, h, -h}, {h, h, -h}, {0, 0, -1});              // back
  add_quad(m, {-h, -h, -h}, {h, -h, -h}, {h, -h, h}, {-h, -h, h}, {0, -1, 0});              // bottom
  add_tri(m, {h, -h, h}, {h, -h, -h}, {h, h, -h}, {1, 0, 0});
  add_tri(m, {-h, -h, -h}, {-h, -h, h}, {-h, h, -h}, {-1, 0, 0});
  return m;
}

Mesh sphere(int rings = 16, int segments = 32) {
  Mesh m;
  const float pi = 3.14159265358979f;
  for (int r = 0; r <= rings; ++r) {
    float v = static_cast<float>(r) / rings, phi = v * pi;
    for (int s = 0; s <= segments; ++s) {
      float u = static_cast<float>(s) / segments, th = u * 2 * pi;
      Vec3 n{std::sin(phi) * std::cos(th), std::cos(phi), -std::sin(phi) * std::sin(th)};
      m.positions.push_back({n[0] * 0.5f, n[1] * 0.5f, n[2] * 0.5f});
      m.normals.push_back(n);
    }
  }
  for (int r = 0; r < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      uint32_t a = r * (segments + 1) + s, b = a + segments + 1;
      if (r != 0) m.triangles.push_back({a, b, a + 1});
      if (r != rings - 1) m.triangles.push_back({a + 1, b, b + 1});
    }
  return m;
}

// Cylinder along Y (Studio's runs along X; Y-up is friendlier for generated objects).
Mesh cylinder(int segments = 32) {
  Mesh m;
  const float pi = 3.14159265358979f, h = 0.5f;
  for (int s = 0; s <= segments; ++s) {
    float th = 2 * pi * s / segments;
    Vec3 n{std::cos(th), 0, -std::sin(th)};
    m.positions.push_back({n[0] * h, -h, n[2] * h});
    m.normals.push_back(n);
    m.positions.push_back({n[0] * h, h, n[2] * h});
    m.normals.push_back(n);
  }
  for (int s = 0; s < segments; ++s) {
    uint32_t a = 2 * s;
    m.triangles.push_back({a, a + 2, a + 3});
    m.triangles.push_back({a, a + 3, a + 1});
  }
  for (int cap = 0; cap < 2; ++cap) {
    float y = cap ? h : -h;
    Vec3 n{0, cap ? 1.f : -1.f, 0};
    auto center = static_cast<uint32_t>(m.positions.size());
    m.positions.push_back({0, y, 0});
    m.normals.push_back(n);
    for (int s = 0; s <= segments; ++s) {
      float th = 2 * pi * s / segments;
      m.positions.push_back({std::cos(th) * h, y, -std::sin(th) * h});
      m.normals.push_back(n);
    }
    for (int s = 0; s < segments; ++s) {
      uint32_t a = center + 1 + s;
      if (cap) m.triangles.push_back({center, a, a + 1});
      else m.triangles.push_back({center, a + 1, a});
    }
  }
  return m;
}

}  // namespace

const char* part_name(PartKind k) {
  switch (k) {
    case PartKind::Block: return "Block";
    case PartKind::Sphere: return "Sphere";
    case PartKind::Cylinder: return "Cylinder";
    case PartKind::Wedge: return "Wedge";
  }
  return "Part";
}

std::string part_source(PartKind k) {
  std::string n = part_name(k);
  for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "primitive:" + n;
}

bool part_from_source(const std::string& src, PartKind& out) {
  for (PartKind k : {PartKind::Block, PartKind::Sphere, PartKind::Cylinder, PartKind::Wedge})
    if (src == part_source(k)) {
      out = k;
      return true;
    }
  return false;
}

std::shared_ptr<const Mesh> make_part_mesh(PartKind k) {
  static std::mutex mu;
  static std::shared_ptr<const Mesh> cache[4];
  std::lock_guard lock(mu);
  auto& slot = cache[static_cast<int>(k)];
  if (!slot) {
    switch (k) {
      case PartKind::Block: slot = std::make_shared<Mesh>(block()); break;
      case PartKind::Sphere: slot = std::make_shared<Mesh>(sphere()); break;
      case PartKind::Cylinder: slot = std::make_shared<Mesh>(cylinder()); break;
      case PartKind::Wedge: slot = std::make_shared<Mesh>(wedge()); break;
    }
  }
  return slot;
}

}  // namespace cubeforge::editor
