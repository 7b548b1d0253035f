// Geometric comparison of meshes: area-weighted surface sampling and the symmetric Chamfer distance (kd-tree
// nearest neighbours), for adaptive-vs-dense, decimation and live-preview reports. Occupancy IoU is in grid.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cubeforge/mesh.h"

namespace cubeforge {

// n points uniformly distributed over the surface (area-weighted face choice, uniform barycentrics), deterministic
// for a given seed. An empty mesh gives no points. face_normals (optional): per point, the unit normal of the face it
// lies on (right-handed corner order; zero for a zero-area face, which is never drawn unless all faces are).
std::vector<Vec3> sample_surface(const Mesh& mesh, size_t n, uint64_t seed = 1,
                                 std::vector<Vec3>* face_normals = nullptr);

struct ChamferResult {
  double mean_a_to_b = 0.0;   // mean over points of A of the distance to the nearest point of B
  double mean_b_to_a = 0.0;
  double chamfer = 0.0;       // (mean_a_to_b + mean_b_to_a) / 2, in the meshes' units (not squared)
  double hausdorff = 0.0;     // max of both directed maxima
  size_t points_a = 0, points_b = 0;
};

// Symmetric Chamfer distance between two point sets. Both empty: all zero; exactly one empty: infinity.
ChamferResult chamfer_distance(const std::vector<Vec3>& a, const std::vector<Vec3>& b);
// Between two meshes: on `samples` surface points of each (samples == 0: on the vertices).
ChamferResult chamfer_distance(const Mesh& a, const Mesh& b, size_t samples = 20000, uint64_t seed = 1);

}  // namespace cubeforge
