// Placement math for generated meshes (pure functions, no editor state): bounds, base-centring (x/z centre and
// lowest point at the origin, Y up), uniform fit into a requested bounding box, and the transform that puts a
// mesh's base centre on a chosen spot. The worker bakes pivot and scale into the final mesh; the ghost preview
// uses the same rules through a transform so it lands exactly where the result will.
#pragma once
#include <cubeforge/editor/types.h>
#include <cubeforge/mesh.h>

#include <array>
#include <optional>
#include <string>

namespace cubeforge::ai {

struct Bounds {
  Vec3 min{0.f, 0.f, 0.f};
  Vec3 max{0.f, 0.f, 0.f};
  bool valid = false;
  Vec3 size() const { return {max[0] - min[0], max[1] - min[1], max[2] - min[2]}; }
};
Bounds mesh_bounds(const Mesh& m);

// Uniform scale that makes a mesh of `size` fit inside `box` (each side), 1 when box is absent or size degenerate.
float fit_scale(const Vec3& size, const std::optional<std::array<float, 3>>& box);

// Moves the mesh so its x/z centre is at 0 and its lowest point at y = 0, then scales it uniformly by `scale`.
void base_centre_and_scale(Mesh& m, float scale);

// Transform that puts the base centre of a mesh with bounds b, scaled by `scale`, on `spot`.
editor::Transform ghost_transform(const Bounds& b, float scale, const Vec3& spot);

// A placement spot without float noise: each coordinate rounded to 0.1 mm (1e-4) and -0 made 0, so that a spot
// from a ray hit shows as 2.000 / 0.000 in the Properties panel and the scene file, not 1.99999988 / -0.000.
Vec3 clean_spot(const Vec3& spot);

// Out-of-range check of a requested bounding box: empty when fine, else a message for the panel.
std::string check_bbox(const std::array<float, 3>& box);
inline constexpr float kBBoxMin = 0.01f, kBBoxMax = 1000.f, kBBoxMaxAspect = 50.f;

// Entity / undo-step names from a prompt (trimmed, one line, at most max_chars characters + "…").
std::string short_prompt(const std::string& prompt, std::size_t max_chars = 48);

}  // namespace cubeforge::ai
