// Marching cubes over the reference grid, with the conventions of cube3d-reference.md §8.5 (warp >= 1.9 / skimage):
// corner bit set iff value >= iso, one shared vertex per grid edge whose endpoints are on different sides
// (exactly one >= iso), node-aligned vertex n + t*e_axis, every one of the (M-1)^3 cells, the classic Bourke
// 256-case table, vertices ordered by (node flat index, axis x<y<z), faces by cell flat index then table order,
// each table triangle (a, b, c) emitted as (c, b, a) so that normals point outward for positive-inside fields.
#pragma once
#include <cstddef>

#include "cubeforge/grid.h"
#include "cubeforge/mesh.h"

namespace cubeforge {

// Grid position g (in node units, 0..M-1 along each axis) to world position.
enum class VertexMapping {
  NewWarp,         // default, warp >= 1.9 and skimage: v = g / M * 2.1 - 1.05 = x_true*(M-1)/M - 1.05/M
  OldWarpCentred,  // warp < 1.9 (+0.5 cell offset): v = (g + 0.5) / M * 2.1 - 1.05 = x_true*(M-1)/M
  Exact,           // the true coordinate: v = x_true = g * 2.1 / (M-1) - 1.05
};

struct MarchingCubesOptions {
  VertexMapping mapping = VertexMapping::NewWarp;
  float iso = 0.0f;           // the reference uses 0 (logits)
  bool reverse_winding = true;  // (a, b, c) -> (c, b, a) as the reference does; false keeps the table order
  int threads = 0;            // 0 = all OpenMP threads; the output does not depend on it
};

// Extracts the iso-surface of a dense grid of values (any M >= 2 points per axis, flat index (i*M + j)*M + k).
// A grid with no crossing gives an empty mesh (no error). Normals and colours are left empty.
Mesh marching_cubes(const float* values, int M, const MarchingCubesOptions& options = {});
// Same for an evaluated grid (dense or adaptive: unevaluated points hold interpolated values).
Mesh marching_cubes(const GridValues& grid, const MarchingCubesOptions& options = {});

// World coordinate of grid position g (node units) for a grid of M points per axis.
double map_grid_coordinate(double g, int M, VertexMapping mapping);

}  // namespace cubeforge
