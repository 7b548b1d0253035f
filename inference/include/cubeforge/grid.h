// The reference occupancy query grid (cube3d-reference.md §8.5) and its evaluation, dense or coarse-to-fine,
// generic over a batched field evaluator (the neural occupancy decoder, or an analytic field in tests/benchmarks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "cubeforge/cancel.h"

namespace cubeforge {

// Grid geometry. M = 2^rb + 1 points per axis over [-1.05, 1.05], rb in [kMinResolutionBase, kMaxResolutionBase].
// Coordinate i: float32(i * (2.1 / (M - 1)) - 1.05) computed in double; the last one is exactly 1.05f.
// Flat index of point (i, j, k) (x, y, z): n = (i * M + j) * M + k (z fastest), as the reference's meshgrid "ij".
inline constexpr int kMinResolutionBase = 4;
inline constexpr int kMaxResolutionBase = 9;
inline constexpr double kGridHalfExtent = 1.05;

int grid_points_per_axis(int rb);                 // 2^rb + 1; throws Error when rb is out of range
float grid_coord(int i, int M);                   // coordinate of index i on an axis of M points
std::vector<float> grid_axis_coords(int rb);      // the M coordinates of one axis

// Batched field: writes out[p] for the n points xyz[3p .. 3p+2]. Positive = inside (logits for the decoder).
// Called from the calling thread only, with n <= the chunk size; parallelism inside is the evaluator's business.
using FieldFn = std::function<void(const float* xyz, size_t n, float* out)>;
// Progress: points evaluated so far and the number of points known to need evaluation so far (for the adaptive
// evaluation the total grows level by level; the last call has done == total).
using GridProgressFn = std::function<void(size_t done, size_t total)>;

// Values on every point of the grid. For an adaptive evaluation, points that were not evaluated hold the value
// interpolated from the coarser levels (see evaluate_adaptive), so every consumer can treat the grid as dense.
struct GridValues {
  int rb = 0;
  int M = 0;
  std::vector<float> values;              // M^3, flat index (i * M + j) * M + k
  std::vector<uint64_t> evaluated_bits;   // bit n set iff point n was evaluated; empty = every point (dense)
  size_t points_evaluated = 0;            // number of field evaluations (points)
  size_t evaluator_calls = 0;             // number of batched FieldFn calls
  std::vector<size_t> points_per_level;   // adaptive: new points evaluated at each level, coarsest first

  size_t point_count() const { return size_t(M) * size_t(M) * size_t(M); }
  size_t index(int i, int j, int k) const { return (size_t(i) * size_t(M) + size_t(j)) * size_t(M) + size_t(k); }
  float at(int i, int j, int k) const { return values[index(i, j, k)]; }
  bool was_evaluated(size_t n) const {
    return evaluated_bits.empty() || ((evaluated_bits[n >> 6] >> (n & 63)) & 1u);
  }
  // points_evaluated / M^3 (1 for a dense evaluation).
  double fraction_evaluated() const {
    return point_count() ? double(points_evaluated) / double(point_count()) : 0.0;
  }
};

// Wraps values computed elsewhere (e.g. on the GPU) as a dense grid; throws Error if the size is not M^3.
GridValues make_dense_grid(int rb, std::vector<float> values);

// Evaluates every point, in consecutive chunks of `chunk` points in flat-index order (the last chunk is short,
// not padded). Checks `cancel` between chunks and throws Cancelled.
GridValues evaluate_dense(const FieldFn& field, int rb, size_t chunk = 16384, const GridProgressFn& progress = {},
                          const CancelToken* cancel = nullptr);

struct AdaptiveOptions {
  int coarse_rb = 5;         // level evaluated in full (clamped to [4, rb]); rb <= coarse_rb means dense
  float margin = 1.0f;       // a cell is refined when its corners straddle 0 or any |value| < margin (field units)
  int dilation = 1;          // refined cells are dilated by this many cells (Chebyshev) at their level
  size_t chunk = 16384;      // points per FieldFn call
  // Level-dependent variants of rules 2 and 3 (defaults: the fixed rule). The CUDA engine (cuda_shape.h
  // GpuGridOptions) has the same two fields and selects the same points.
  bool scale_margin = false; // true: level-L cells are flagged with margin_L = ldexp(margin, coarse_rb - L), i.e. the
                             // margin halves with the cell size, so margin / cell size (for a field with Lipschitz
                             // bound K, a zero inside a cell with no corner |v| < margin is excluded when
                             // margin_L >= K * sqrt(3)/2 * cell size) is the same at every level
  int final_dilation = -1;   // dilation when refining the cells of level rb-1 into the final grid; -1 = dilation
                             // (a surface cell of the final grid lies in exactly one level rb-1 cell, so the last
                             // dilation only guards against cells that rule 2 failed to flag)
  GridProgressFn progress;
  const CancelToken* cancel = nullptr;
};

// Coarse-to-fine evaluation. The rule, level by level (level L has 2^L cells per axis, its points are the points
// of the final grid whose indices are multiples of 2^(rb-L); every level's points are also points of the next):
//  1. level coarse_rb: every point is evaluated.
//  2. a cell of level L is "flagged" when it was refined (its corners are all evaluated) and its 8 corner values
//     straddle 0 (some >= 0 and some < 0) or any corner has |v| < margin (margin_L with scale_margin). At level
//     coarse_rb every cell counts.
//  3. the flagged cells of level L, dilated by `dilation` cells (final_dilation when L = rb-1, if >= 0), are
//     refined: all 27 level-(L+1) points inside
//     each (corners, edge midpoints, face and cell centres) are evaluated if not already.
//  4. every level-(L+1) point that was not evaluated gets the trilinear interpolation of its level-L cell
//     (separable midpoint averaging along z, then y, then x, from level-L values, evaluated or interpolated).
// Consequence: a cell that was never refined has corner values that are convex combinations of same-sign values
// of magnitude >= margin, so it holds no sign change; cells near the surface hold exact field values. When the
// coarse levels classify every cell correctly, marching cubes on the result gives the dense grid's mesh exactly.
// Only thin features missed by the coarse grid (inside a coarse cell, no sign change, |v| >= margin) can differ.
GridValues evaluate_adaptive(const FieldFn& field, int rb, const AdaptiveOptions& options = {});

// Occupancy IoU (inside iff value >= 0). Grids of different rb are compared on the points of the coarser one
// (they are points of the finer one too). Two empty occupancies give 1.
double occupancy_iou(const GridValues& a, const GridValues& b);

}  // namespace cubeforge
