// Owns the mesh → shape-encoder input preparation (reference §9 steps 1-2): face filtering, the bounding-box
// normalisation and the area-weighted surface sampling with face normals (through mesh_metrics' sampler).
#include "cubeforge/encoder_input.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <unordered_set>

#include "cubeforge/error.h"
#include "cubeforge/mesh_metrics.h"
#include "face_geometry.h"

namespace cubeforge {
namespace {

constexpr float kHalfExtent = 0.96f;      // the longest side becomes 2 x 0.96
constexpr double kMinHeight = 1e-8;       // trimesh's merge tolerance: faces lower than this are degenerate

struct TripleHash {
  size_t operator()(const std::array<uint32_t, 3>& t) const {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t v : t) h = (h ^ v) * 1099511628211ull;
    return size_t(h);
  }
};

// The face's smallest height (twice its area over its longest edge); 0 for a repeated corner.
double face_height(const Mesh& m, const std::array<uint32_t, 3>& t) {
  if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2]) return 0.0;
  double longest = 0.0;
  for (int k = 0; k < 3; ++k) {
    const Vec3 &p = m.positions[t[k]], &q = m.positions[t[(k + 1) % 3]];
    const double e[3] = {double(q[0]) - p[0], double(q[1]) - p[1], double(q[2]) - p[2]};
    longest = std::max(longest, std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]));
  }
  const auto [x, y, z] = mesh_detail::face_cross(m, t);
  return longest > 0.0 ? std::sqrt(x * x + y * y + z * z) / longest : 0.0;
}

}  // namespace

EncoderInput make_encoder_input(const Mesh& mesh, const EncoderInputOptions& options) {
  if (options.points == 0) throw Error("encoder input: the number of surface points must be positive");
  if (mesh.triangles.empty()) throw Error("encoder input: the mesh has no faces");
  for (size_t i = 0; i < mesh.positions.size(); ++i)
    for (float v : mesh.positions[i])
      if (!std::isfinite(v)) throw Error("encoder input: vertex " + std::to_string(i) + " is not a finite position");
  EncoderInput in;
  Mesh kept;
  kept.positions = mesh.positions;
  std::unordered_set<std::array<uint32_t, 3>, TripleHash> seen;
  for (size_t f = 0; f < mesh.triangles.size(); ++f) {
    const auto& t = mesh.triangles[f];
    for (uint32_t v : t)
      if (v >= mesh.positions.size())
        throw Error("encoder input: face " + std::to_string(f) + " names vertex " + std::to_string(v) + " of " +
                    std::to_string(mesh.positions.size()));
    if (face_height(mesh, t) <= kMinHeight) {
      ++in.faces_degenerate;
      continue;
    }
    std::array<uint32_t, 3> key = t;
    std::sort(key.begin(), key.end());
    if (!seen.insert(key).second) {
      ++in.faces_duplicate;
      continue;
    }
    kept.triangles.push_back(t);
  }
  if (kept.triangles.empty())
    throw Error("encoder input: all " + std::to_string(mesh.triangles.size()) + " faces are degenerate (no area)");
  in.faces_used = kept.triangles.size();

  // bounding box of the corners the kept faces use
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  for (const auto& t : kept.triangles)
    for (uint32_t v : t)
      for (int q = 0; q < 3; ++q) {
        lo[q] = std::min(lo[q], kept.positions[v][q]);
        hi[q] = std::max(hi[q], kept.positions[v][q]);
      }
  float extent = 0.f;
  for (int q = 0; q < 3; ++q) {
    in.center[q] = 0.5f * (lo[q] + hi[q]);
    extent = std::max(extent, hi[q] - lo[q]);
  }
  // extent > 0 (a kept face has a positive height); not finite only for coordinates near FLT_MAX
  if (!std::isfinite(extent)) throw Error("encoder input: the mesh's extent overflows a float");
  in.scale = 2.f * kHalfExtent / extent;
  for (auto& p : kept.positions)
    for (int q = 0; q < 3; ++q) p[q] = (p[q] - in.center[q]) * in.scale;
  in.points = sample_surface(kept, options.points, options.seed, &in.normals);
  return in;
}

void to_input_frame(Mesh& mesh, const EncoderInput& input) {
  for (auto& p : mesh.positions)
    for (int q = 0; q < 3; ++q) p[q] = p[q] / input.scale + input.center[q];
}

}  // namespace cubeforge
