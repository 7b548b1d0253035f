// Triangle mesh exchanged between the inference library, the exporters, the editor and the plugin.
// Plain arrays: positions/normals are xyz triples, indices are triangle corner triples (counter-clockwise = outward).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cubeforge {

using Vec3 = std::array<float, 3>;

struct Mesh {
  std::vector<Vec3> positions;
  std::vector<Vec3> normals;           // empty or one per position
  std::vector<Vec3> colors;            // empty or one per position (linear RGB 0..1)
  std::vector<std::array<uint32_t, 3>> triangles;

  bool empty() const { return triangles.empty(); }
  size_t vertex_count() const { return positions.size(); }
  size_t face_count() const { return triangles.size(); }
};

}  // namespace cubeforge
