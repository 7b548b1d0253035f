// Tests of the reference grid, dense/adaptive evaluation, marching cubes, clean-up and mesh metrics on analytic
// fields (sphere, torus, box): watertightness, orientation, area/volume vs analytic, adaptive vs dense.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <array>
#include <set>

#include "cubeforge/analytic_fields.h"
#include "cubeforge/error.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/mesh_metrics.h"
#include "mesh/mc_tables.h"

using namespace cubeforge;

namespace {

constexpr double kPi = 3.14159265358979323846;

struct Shape {
  const char* name;
  FieldFn field;
  double area, volume;
};

// Box faces are placed 0.1 cell beyond a node layer of the rb-7 grid: marching cubes cannot keep sharp edges, and
// the chamfer it cuts along each edge grows with that offset (about 1% of the area for a box 0.6 x 0.45 x 0.5 at
// a 0.57-cell offset, 0.02% at 0.1).
double snap_rb7(double t) {
  const double h = 2.1 / 128;
  return -1.05 + (std::floor((t + 1.05) / h) + 0.1) * h;
}

std::vector<Shape> shapes() {
  const double r = 0.8, R = 0.6, rt = 0.25, hx = snap_rb7(0.6), hy = snap_rb7(0.45), hz = snap_rb7(0.5);
  return {
      {"sphere", sphere_field(float(r)), 4 * kPi * r * r, 4.0 / 3.0 * kPi * r * r * r},
      {"torus", torus_field(float(R), float(rt)), 4 * kPi * kPi * R * rt, 2 * kPi * kPi * R * rt * rt},
      {"box", box_field(float(hx), float(hy), float(hz)), 8 * (hx * hy + hy * hz + hx * hz), 8 * hx * hy * hz},
  };
}

Vec3 face_normal(const Mesh& m, size_t f, Vec3* centroid = nullptr) {
  const auto& t = m.triangles[f];
  const Vec3 &a = m.positions[t[0]], &b = m.positions[t[1]], &c = m.positions[t[2]];
  const float u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
  if (centroid)
    for (int q = 0; q < 3; ++q) (*centroid)[q] = (a[q] + b[q] + c[q]) / 3.0f;
  return {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
}

}  // namespace

TEST(Grid, CoordinatesAndIndexing) {
  EXPECT_EQ(grid_points_per_axis(4), 17);
  EXPECT_EQ(grid_points_per_axis(8), 257);
  EXPECT_EQ(grid_points_per_axis(9), 513);
  const auto c = grid_axis_coords(8);
  ASSERT_EQ(c.size(), 257u);
  EXPECT_EQ(c.front(), -1.05f);
  EXPECT_EQ(c.back(), 1.05f);
  EXPECT_EQ(c[1], float(1 * (2.1 / 256) - 1.05));
  EXPECT_EQ(c[128], float(128 * (2.1 / 256) - 1.05));
  // Flat order: z fastest.
  std::vector<float> seen;
  GridValues g = evaluate_dense(
      [&](const float* p, size_t n, float* out) {
        for (size_t i = 0; i < n; ++i) {
          out[i] = 0;
          seen.insert(seen.end(), p + 3 * i, p + 3 * i + 3);
        }
      },
      4, 1000);
  ASSERT_EQ(seen.size(), 17u * 17 * 17 * 3);
  const auto c4 = grid_axis_coords(4);
  const size_t n = g.index(2, 5, 7);
  EXPECT_EQ(n, (2u * 17 + 5) * 17 + 7);
  EXPECT_EQ(seen[3 * n], c4[2]);
  EXPECT_EQ(seen[3 * n + 1], c4[5]);
  EXPECT_EQ(seen[3 * n + 2], c4[7]);
  EXPECT_EQ(g.evaluator_calls, size_t((4913 + 999) / 1000));
  EXPECT_DOUBLE_EQ(g.fraction_evaluated(), 1.0);
}

TEST(Grid, ResolutionBaseOutOfRange) {
  auto f = sphere_field(0.5f);
  EXPECT_THROW(grid_points_per_axis(3), Error);
  EXPECT_THROW(grid_points_per_axis(10), Error);
  EXPECT_THROW(evaluate_dense(f, 3), Error);
  EXPECT_THROW(evaluate_adaptive(f, 10), Error);
  EXPECT_THROW(make_dense_grid(5, std::vector<float>(10)), Error);
}

TEST(Grid, CancelAndProgress) {
  CancelToken tok;
  size_t calls = 0;
  auto f = [&](const float*, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) out[i] = -1;
    if (++calls == 2) tok.cancel();
  };
  EXPECT_THROW(evaluate_dense(f, 6, 1000, {}, &tok), Cancelled);
  EXPECT_EQ(calls, 2u);
  tok.reset();
  calls = 0;
  AdaptiveOptions ao;
  ao.cancel = &tok;
  ao.chunk = 500;
  EXPECT_THROW(evaluate_adaptive(f, 6, ao), Cancelled);

  size_t last_done = 0, last_total = 0;
  bool monotonic = true;
  AdaptiveOptions po;
  po.margin = 0.0f;
  po.progress = [&](size_t d, size_t t) {
    monotonic = monotonic && d >= last_done && d <= t;
    last_done = d;
    last_total = t;
  };
  GridValues g = evaluate_adaptive(sphere_field(0.7f), 7, po);
  EXPECT_TRUE(monotonic);
  EXPECT_EQ(last_done, g.points_evaluated);
  EXPECT_EQ(last_total, g.points_evaluated);
}

TEST(MarchingCubes, TableCoversExactlyTheCrossedEdges) {
  for (int c = 0; c < 256; ++c) {
    std::set<int> crossed, used;
    for (int e = 0; e < 12; ++e)
      if (((c >> mc::kEdgeCorners[e][0]) & 1) != ((c >> mc::kEdgeCorners[e][1]) & 1)) crossed.insert(e);
    for (int t = mc::kCaseStart[c]; t < mc::kCaseStart[c + 1]; ++t) used.insert(mc::kTriEdges[t]);
    EXPECT_EQ(crossed, used) << "case " << c;
    EXPECT_EQ((mc::kCaseStart[c + 1] - mc::kCaseStart[c]) % 3, 0) << "case " << c;
  }
}

TEST(MarchingCubes, SinglePositiveNodeConventions) {
  // 3^3 grid, only the centre node (1,1,1) >= 0: an octahedron of 6 vertices and 8 faces.
  std::vector<float> v(27, -1.0f);
  v[13] = 1.0f;
  MarchingCubesOptions o;
  o.mapping = VertexMapping::Exact;
  Mesh m = marching_cubes(v.data(), 3, o);
  ASSERT_EQ(m.vertex_count(), 6u);
  ASSERT_EQ(m.face_count(), 8u);
  // Vertex order: by owning node index then axis: (0,1,1)x, (1,0,1)y, (1,1,0)z, (1,1,1)x, y, z; t = 0.5.
  const double h = 2.1 / 2;
  auto X = [&](double g) { return float(g * h - 1.05); };
  const Vec3 expect[6] = {{X(0.5), X(1), X(1)}, {X(1), X(0.5), X(1)}, {X(1), X(1), X(0.5)},
                          {X(1.5), X(1), X(1)}, {X(1), X(1.5), X(1)}, {X(1), X(1), X(1.5)}};
  for (int i = 0; i < 6; ++i)
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(m.positions[i][a], expect[i][a], 1e-6) << i << " " << a;
  MeshStats s = mesh_stats(m);
  EXPECT_TRUE(s.watertight);
  EXPECT_GT(s.volume, 0.0);
  // A node exactly at 0 counts as inside (bit set iff value >= 0).
  v[13] = 0.0f;
  Mesh z = marching_cubes(v.data(), 3, o);
  EXPECT_EQ(z.face_count(), 8u);
  // Reversed winding off: same faces, opposite orientation.
  v[13] = 1.0f;
  o.reverse_winding = false;
  Mesh r = marching_cubes(v.data(), 3, o);
  EXPECT_LT(mesh_stats(r).volume, 0.0);
}

TEST(MarchingCubes, EmptyAndFullGridsGiveEmptyMesh) {
  GridValues neg = make_dense_grid(4, std::vector<float>(17 * 17 * 17, -3.0f));
  EXPECT_TRUE(marching_cubes(neg).empty());
  GridValues pos = make_dense_grid(4, std::vector<float>(17 * 17 * 17, 3.0f));
  EXPECT_TRUE(marching_cubes(pos).empty());
  EXPECT_EQ(marching_cubes(neg).vertex_count(), 0u);
  GridValues adaptive = evaluate_adaptive(sphere_field(-1.0f), 7);  // nothing inside
  EXPECT_TRUE(marching_cubes(adaptive).empty());
  EXPECT_THROW(marching_cubes(GridValues{}), Error);
}

TEST(MarchingCubes, VertexMappings) {
  GridValues g = evaluate_dense(sphere_field(0.5f), 5);
  MarchingCubesOptions o;
  o.mapping = VertexMapping::Exact;
  Mesh ex = marching_cubes(g, o);
  o.mapping = VertexMapping::NewWarp;
  Mesh nw = marching_cubes(g, o);
  o.mapping = VertexMapping::OldWarpCentred;
  Mesh ow = marching_cubes(g, o);
  ASSERT_EQ(ex.vertex_count(), nw.vertex_count());
  ASSERT_EQ(ex.triangles, nw.triangles);
  const double M = g.M;
  for (size_t i = 0; i < ex.vertex_count(); ++i)
    for (int a = 0; a < 3; ++a) {
      const double x = ex.positions[i][a];
      EXPECT_NEAR(nw.positions[i][a], x * (M - 1) / M - 1.05 / M, 2e-6);
      EXPECT_NEAR(ow.positions[i][a], x * (M - 1) / M, 2e-6);
    }
}

TEST(MarchingCubes, ThreadCountDoesNotChangeOutput) {
  GridValues g = evaluate_dense(torus_field(0.6f, 0.25f), 6);
  MarchingCubesOptions o;
  o.threads = 1;
  Mesh a = marching_cubes(g, o);
  for (int t : {2, 3, 7}) {
    o.threads = t;
    Mesh b = marching_cubes(g, o);
    EXPECT_EQ(a.positions, b.positions) << t;
    EXPECT_EQ(a.triangles, b.triangles) << t;
  }
}

TEST(MarchingCubes, WatertightOnRandomFields) {
  // Random values with a negative border: every face-ambiguous configuration shows up; the surface must close.
  const int M = 20;
  std::vector<float> v(M * M * M);
  uint64_t s = 12345;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < M; ++j)
      for (int k = 0; k < M; ++k) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const bool border = i == 0 || j == 0 || k == 0 || i == M - 1 || j == M - 1 || k == M - 1;
        v[(i * M + j) * M + k] = border ? -1.0f : float(int64_t(s >> 40) % 2001 - 1000) / 1000.0f;
      }
  Mesh m = marching_cubes(v.data(), M);
  ASSERT_FALSE(m.empty());
  MeshStats st = mesh_stats(m);
  EXPECT_TRUE(st.watertight) << st.boundary_edges << " boundary, " << st.non_manifold_edges << " non-manifold";
  EXPECT_GT(st.volume, 0.0);
}

TEST(MarchingCubes, AnalyticShapesAtRb7) {
  MarchingCubesOptions o;
  o.mapping = VertexMapping::Exact;
  for (const auto& sh : shapes()) {
    GridValues g = evaluate_dense(sh.field, 7);
    Mesh m = marching_cubes(g, o);
    MeshStats s = mesh_stats(m);
    EXPECT_TRUE(s.watertight) << sh.name;
    EXPECT_EQ(s.components, 1u) << sh.name;
    EXPECT_GT(s.volume, 0.0) << sh.name;
    EXPECT_NEAR(s.area / sh.area, 1.0, 0.01) << sh.name << " area " << s.area << " vs " << sh.area;
    EXPECT_NEAR(s.volume / sh.volume, 1.0, 0.01) << sh.name << " volume " << s.volume << " vs " << sh.volume;
    // Normals point away from the centre (sphere, box) / the core circle (torus).
    size_t inward = 0;
    for (size_t f = 0; f < m.face_count(); ++f) {
      Vec3 c;
      const Vec3 n = face_normal(m, f, &c);
      Vec3 d = c;
      if (std::string(sh.name) == "torus") {
        const float rxz = std::sqrt(c[0] * c[0] + c[2] * c[2]);
        d = {c[0] - 0.6f * c[0] / rxz, c[1], c[2] - 0.6f * c[2] / rxz};
      }
      if (n[0] * d[0] + n[1] * d[1] + n[2] * d[2] < 0.0f) ++inward;
    }
    EXPECT_EQ(inward, 0u) << sh.name;
    std::printf("[ mc rb7 ] %-6s %7zu vertices %7zu faces  area %+.3f%%  volume %+.3f%%\n", sh.name,
                m.vertex_count(), m.face_count(), 100 * (s.area / sh.area - 1), 100 * (s.volume / sh.volume - 1));
  }
}

TEST(Adaptive, MatchesDenseOnAnalyticShapes) {
  for (const auto& sh : shapes()) {
    GridValues d = evaluate_dense(sh.field, 7);
    AdaptiveOptions ao;
    ao.coarse_rb = 4;
    ao.margin = 0.0f;
    GridValues a = evaluate_adaptive(sh.field, 7, ao);
    Mesh md = marching_cubes(d), ma = marching_cubes(a);
    // Every evaluated point holds the exact field value.
    size_t mismatched = 0;
    for (size_t n = 0; n < a.point_count(); ++n)
      if (a.was_evaluated(n) && a.values[n] != d.values[n]) ++mismatched;
    EXPECT_EQ(mismatched, 0u);
    const ChamferResult cd = chamfer_distance(md, ma, 0);
    const double iou = occupancy_iou(d, a);
    std::printf("[ adaptive rb7 ] %-6s evaluated %zu of %zu (%.1f%%), vertices %zu vs %zu, chamfer %.3g, IoU %.6f\n",
                sh.name, a.points_evaluated, a.point_count(), 100 * a.fraction_evaluated(), ma.vertex_count(),
                md.vertex_count(), cd.chamfer, iou);
    EXPECT_EQ(ma.positions, md.positions) << sh.name;
    EXPECT_EQ(ma.triangles, md.triangles) << sh.name;
    EXPECT_DOUBLE_EQ(iou, 1.0);
    EXPECT_LT(a.fraction_evaluated(), 0.25) << sh.name;
    EXPECT_EQ(a.points_per_level.size(), 4u);
  }
}

TEST(Adaptive, MarginCatchesThinFeatureMissedByCoarseGrid) {
  // A plate 0.02 thick between two rb-4 grid planes (y = 0 and 0.13): invisible to the coarse pass by sign.
  FieldFn plate = intersection_field(box_field(0.5f, 1.0f, 0.5f), [](const float* p, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) out[i] = 0.01f - std::fabs(p[3 * i + 1] - 0.06f);
  });
  GridValues d = evaluate_dense(plate, 7);
  Mesh md = marching_cubes(d);
  ASSERT_FALSE(md.empty());
  AdaptiveOptions ao;
  ao.coarse_rb = 4;
  ao.margin = 0.0f;
  EXPECT_TRUE(marching_cubes(evaluate_adaptive(plate, 7, ao)).empty());
  ao.margin = 0.08f;
  GridValues a = evaluate_adaptive(plate, 7, ao);
  Mesh ma = marching_cubes(a);
  EXPECT_EQ(ma.positions, md.positions);
  EXPECT_EQ(ma.triangles, md.triangles);
  EXPECT_LT(a.fraction_evaluated(), 0.5);
}

TEST(Adaptive, ScaledMarginAndFinalDilationMatchDense) {
  // The level-dependent rule (grid.h scale_margin, final_dilation): a subset of the fixed rule's points, and on these
  // smooth shapes the same mesh as dense. Margin 0.02 world units from coarse rb 5, as the GPU bench uses.
  for (const auto& sh : shapes()) {
    const GridValues d = evaluate_dense(sh.field, 8);
    const Mesh md = marching_cubes(d);
    AdaptiveOptions fixed;
    fixed.margin = 0.02f;
    AdaptiveOptions scaled = fixed;
    scaled.scale_margin = true;
    scaled.final_dilation = 0;
    const GridValues af = evaluate_adaptive(sh.field, 8, fixed), as = evaluate_adaptive(sh.field, 8, scaled);
    size_t extra = 0;  // points the scaled rule evaluates that the fixed one does not
    for (size_t n = 0; n < as.point_count(); ++n) extra += as.was_evaluated(n) && !af.was_evaluated(n);
    EXPECT_EQ(extra, 0u) << sh.name;
    EXPECT_LT(as.points_evaluated, af.points_evaluated * 6 / 10) << sh.name;
    EXPECT_EQ(as.points_per_level.front(), af.points_per_level.front()) << sh.name;
    const Mesh ma = marching_cubes(as);
    std::printf("[ adaptive rb8 ] %-6s fixed rule %zu points, scaled margin + final dilation 0: %zu, vertices %zu vs %zu\n",
                sh.name, af.points_evaluated, as.points_evaluated, ma.vertex_count(), md.vertex_count());
    EXPECT_EQ(ma.positions, md.positions) << sh.name;
    EXPECT_EQ(ma.triangles, md.triangles) << sh.name;
  }
  // Each option on its own changes the selection: margins halve per level, the last dilation applies last only.
  const FieldFn f = sphere_field(0.8f);
  AdaptiveOptions a;
  a.margin = 0.02f;
  AdaptiveOptions b = a;
  b.final_dilation = 0;
  const GridValues ga = evaluate_adaptive(f, 7, a), gb = evaluate_adaptive(f, 7, b);
  EXPECT_EQ(std::vector<size_t>(ga.points_per_level.begin(), ga.points_per_level.end() - 1),
            std::vector<size_t>(gb.points_per_level.begin(), gb.points_per_level.end() - 1));
  EXPECT_LT(gb.points_per_level.back(), ga.points_per_level.back());
  AdaptiveOptions c = a;
  c.scale_margin = true;
  const GridValues gc = evaluate_adaptive(f, 7, c);
  EXPECT_EQ(gc.points_per_level[1], ga.points_per_level[1]);  // level coarse+1 uses the coarse margin
  EXPECT_LT(gc.points_per_level[2], ga.points_per_level[2]);
  b.final_dilation = -2;
  EXPECT_THROW(evaluate_adaptive(f, 7, b), Error);
}

TEST(Metrics, ChamferAndIoU) {
  GridValues a = evaluate_dense(sphere_field(0.8f), 6), b = evaluate_dense(sphere_field(0.7f), 6);
  Mesh ma = marching_cubes(a), mb = marching_cubes(b);
  const ChamferResult same = chamfer_distance(ma, ma, 5000);
  EXPECT_LT(same.chamfer, 0.02);
  EXPECT_DOUBLE_EQ(chamfer_distance(ma, ma, 0).chamfer, 0.0);
  const ChamferResult diff = chamfer_distance(ma, mb, 5000);
  EXPECT_NEAR(diff.chamfer, 0.1 * (64.0 / 65.0), 0.01);  // radius difference, shrunk by the NewWarp (M-1)/M
  EXPECT_NEAR(diff.hausdorff, 0.1, 0.03);
  EXPECT_NEAR(occupancy_iou(a, b), std::pow(0.7 / 0.8, 3), 0.03);
  EXPECT_DOUBLE_EQ(occupancy_iou(a, a), 1.0);
  GridValues c = evaluate_dense(sphere_field(0.8f), 4);  // nests in rb 6
  EXPECT_GT(occupancy_iou(a, c), 0.99);
  EXPECT_TRUE(std::isinf(chamfer_distance(ma, Mesh{}, 100).chamfer));
}

TEST(Cleanup, SmallComponentFilterAndStats) {
  FieldFn two = union_field(sphere_field(0.8f), sphere_field(0.1f, {0.85f, 0.85f, 0.85f}));
  Mesh m = marching_cubes(evaluate_dense(two, 6));
  EXPECT_EQ(count_components(m), 2u);
  Mesh keep = m;
  CleanupOptions none;
  none.min_component_ratio = 0.0f;
  cleanup_mesh(keep, none);
  EXPECT_EQ(count_components(keep), 2u);
  CleanupReport r = cleanup_mesh(m);
  EXPECT_EQ(r.components, 2u);
  EXPECT_EQ(r.components_removed, 1u);
  EXPECT_GT(r.unreferenced_vertices_removed, 0u);
  MeshStats s = mesh_stats(m);
  EXPECT_EQ(s.components, 1u);
  EXPECT_TRUE(s.watertight);
  EXPECT_NEAR(s.bbox_max[0], 0.8 * 64 / 65 - 1.05 / 65, 0.02);
  ASSERT_EQ(m.normals.size(), m.positions.size());
  // Smooth normals of a sphere point along the position.
  double worst = 1;
  for (size_t v = 0; v < m.vertex_count(); ++v) {
    const Vec3& p = m.positions[v];
    const float c = -1.05f / 65;  // NewWarp shift of the centre
    const float d[3] = {p[0] - c, p[1] - c, p[2] - c};
    const float l = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    worst = std::min(worst, double((d[0] * m.normals[v][0] + d[1] * m.normals[v][1] + d[2] * m.normals[v][2]) / l));
  }
  EXPECT_GT(worst, 0.95);
}

TEST(Cleanup, MergeDegenerateAndPivot) {
  // Triangle soup of a tetrahedron (every corner duplicated) plus a degenerate and a duplicate face.
  const Vec3 P[4] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  const int F[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
  Mesh m;
  for (const auto& f : F) {
    const uint32_t b = uint32_t(m.positions.size());
    for (int q = 0; q < 3; ++q) m.positions.push_back(P[f[q]]);
    m.triangles.push_back({b, b + 1, b + 2});
  }
  m.triangles.push_back({0, 0, 1});
  m.triangles.push_back(m.triangles[1]);
  EXPECT_FALSE(mesh_stats(m).watertight);
  CleanupOptions o;
  o.pivot = Pivot::BaseCentre;
  o.min_component_ratio = 0.15f;
  CleanupReport r = cleanup_mesh(m, o);
  EXPECT_EQ(r.vertices_merged, 8u);
  EXPECT_EQ(r.degenerate_faces_removed, 2u);
  EXPECT_EQ(m.vertex_count(), 4u);
  EXPECT_EQ(m.face_count(), 4u);
  MeshStats s = mesh_stats(m);
  EXPECT_TRUE(s.watertight);
  EXPECT_NEAR(s.volume, 1.0 / 6.0, 1e-9);
  EXPECT_FLOAT_EQ(s.bbox_min[1], 0.0f);
  EXPECT_FLOAT_EQ(s.bbox_min[0] + s.bbox_max[0], 0.0f);
  EXPECT_FLOAT_EQ(s.bbox_min[2] + s.bbox_max[2], 0.0f);
  Mesh c = m;
  apply_pivot(c, Pivot::Centre);
  MeshStats sc = mesh_stats(c);
  EXPECT_FLOAT_EQ(sc.bbox_min[1] + sc.bbox_max[1], 0.0f);
}

// The weld and the duplicate-face pass against a sort by key and a std::map of corner sets, with injected copies,
// folds, repeated corners and coincident vertices: test_mesh_cleanup.cpp (CleanupReference.*).

TEST(Cleanup, FoldedFacePairsCancel) {
  Mesh m;
  m.positions = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}};
  m.triangles = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};  // closed tetrahedron
  m.triangles.push_back({0, 1, 4});                             // back-to-back pair: both go
  m.triangles.push_back({4, 1, 0});
  m.triangles.push_back({2, 3, 1});  // same orientation as {1, 2, 3}: a copy, removed
  m.triangles.push_back({3, 2, 1});  // opposite: cancels against one copy; {1, 2, 3} stays
  EXPECT_EQ(remove_degenerate_faces(m), 4u);
  EXPECT_EQ(m.face_count(), 4u);
  MeshStats s = mesh_stats(m);
  EXPECT_TRUE(s.watertight);
  EXPECT_NEAR(s.volume, 1.0 / 6.0, 1e-9);
}
