// Placement math: see placement.h.
#include "placement/placement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace cubeforge::ai {

Bounds mesh_bounds(const Mesh& m) {
  Bounds b;
  if (m.positions.empty()) return b;
  const float inf = std::numeric_limits<float>::infinity();
  b.min = {inf, inf, inf};
  b.max = {-inf, -inf, -inf};
  for (const auto& p : m.positions)
    for (int i = 0; i < 3; ++i) {
      b.min[i] = std::min(b.min[i], p[i]);
      b.max[i] = std::max(b.max[i], p[i]);
    }
  b.valid = true;
  return b;
}

float fit_scale(const Vec3& size, const std::optional<std::array<float, 3>>& box) {
  if (!box) return 1.f;
  float s = std::numeric_limits<float>::infinity();
  for (int i = 0; i < 3; ++i)
    if (size[i] > 1e-6f) s = std::min(s, (*box)[i] / size[i]);
  return std::isfinite(s) && s > 0 ? s : 1.f;
}

void base_centre_and_scale(Mesh& m, float scale) {
  const Bounds b = mesh_bounds(m);
  if (!b.valid) return;
  const float cx = 0.5f * (b.min[0] + b.max[0]), cz = 0.5f * (b.min[2] + b.max[2]), y0 = b.min[1];
  for (auto& p : m.positions) p = {(p[0] - cx) * scale, (p[1] - y0) * scale, (p[2] - cz) * scale};
  // A uniform positive scale keeps unit normals unit: nothing to do for them.
}

editor::Transform ghost_transform(const Bounds& b, float scale, const Vec3& spot) {
  editor::Transform t;
  t.scale = {scale, scale, scale};
  if (!b.valid) {
    t.position = spot;
    return t;
  }
  const float cx = 0.5f * (b.min[0] + b.max[0]), cz = 0.5f * (b.min[2] + b.max[2]);
  t.position = {spot[0] - scale * cx, spot[1] - scale * b.min[1], spot[2] - scale * cz};
  return t;
}

std::string check_bbox(const std::array<float, 3>& box) {
  char buf[256];
  for (int i = 0; i < 3; ++i) {
    if (!std::isfinite(box[i]) || box[i] < kBBoxMin || box[i] > kBBoxMax) {
      std::snprintf(buf, sizeof buf, "bounding box out of range: each side must be between %g and %g (got %g x %g x %g)",
                    double(kBBoxMin), double(kBBoxMax), double(box[0]), double(box[1]), double(box[2]));
      return buf;
    }
  }
  const float mx = std::max({box[0], box[1], box[2]}), mn = std::min({box[0], box[1], box[2]});
  if (mx / mn > kBBoxMaxAspect) {
    std::snprintf(buf, sizeof buf, "bounding box out of range: longest side is %.0fx the shortest (at most %.0fx)",
                  double(mx / mn), double(kBBoxMaxAspect));
    return buf;
  }
  return {};
}

std::string short_prompt(const std::string& prompt, std::size_t max_chars) {
  std::string s;
  bool space = false;
  for (char c : prompt) {
    const bool ws = c == ' ' || c == '\n' || c == '\r' || c == '\t';
    if (ws) {
      space = !s.empty();
      continue;
    }
    if (space) s += ' ';
    space = false;
    s += c;
  }
  if (s.size() <= max_chars) return s;
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
  return s.substr(0, cut) + "\xE2\x80\xA6";
}

Vec3 clean_spot(const Vec3& spot) {
  Vec3 out;
  for (int a = 0; a < 3; ++a) out[a] = std::round(spot[a] * 1e4f) / 1e4f + 0.f;
  return out;
}

}  // namespace cubeforge::ai
