// Owns decimation to a face cap with meshoptimizer (topology-preserving meshopt_simplify with a relaxing error
// bound, sloppy simplification only as the last resort). Large meshes (a marching-cubes surface at rb 8 has 200-600 K
// faces) are first reduced in k-d cells on all cores, each cell with its cut edges locked, then finished as a whole.
#include <meshoptimizer.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "cubeforge/error.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/mesh_io.h"

namespace cubeforge {

namespace {

// meshopt_simplify with the bound relaxed x4 from `bound` until the target is met or max_error is reached; returns
// the index count written to dst.
size_t simplify_relaxed(std::vector<unsigned>& dst, const std::vector<unsigned>& idx, const std::vector<Vec3>& pos,
                        size_t target, float bound, float max_error, unsigned flags, float* err) {
  dst.resize(idx.size());
  size_t n = 0;
  for (;;) {
    n = meshopt_simplify(dst.data(), idx.data(), idx.size(), pos[0].data(), pos.size(), sizeof(Vec3), target, bound,
                         flags, err);
    if (n <= target || bound >= max_error) break;
    bound = std::min(bound * 4.0f, max_error);
  }
  dst.resize(n);
  return n;
}

// The faces split into `cells` k-d cells of equal face counts (each range halved at the median face centroid along
// its longest axis, ties by face id: deterministic): order holds face ids, cell c is [cuts[c], cuts[c + 1]).
void kd_cells(const Mesh& m, int cells, std::vector<uint32_t>& order, std::vector<size_t>& cuts) {
  const size_t F = m.face_count();
  std::vector<Vec3> c(F);  // centroid x 3
  for (size_t f = 0; f < F; ++f)
    for (int d = 0; d < 3; ++d)
      c[f][d] = m.positions[m.triangles[f][0]][d] + m.positions[m.triangles[f][1]][d] + m.positions[m.triangles[f][2]][d];
  order.resize(F);
  std::iota(order.begin(), order.end(), 0u);
  cuts = {0, F};
  while (int(cuts.size()) - 1 < cells) {
    std::vector<size_t> next{0};
    for (size_t r = 0; r + 1 < cuts.size(); ++r) {
      const size_t a = cuts[r], b = cuts[r + 1], mid = (a + b) / 2;
      Vec3 lo = c[order[a]], hi = lo;
      for (size_t i = a; i < b; ++i)
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], c[order[i]][d]);
          hi[d] = std::max(hi[d], c[order[i]][d]);
        }
      int ax = 0;
      for (int d = 1; d < 3; ++d)
        if (hi[d] - lo[d] > hi[ax] - lo[ax]) ax = d;
      std::nth_element(order.begin() + long(a), order.begin() + long(mid), order.begin() + long(b),
                       [&](uint32_t x, uint32_t y) { return c[x][ax] < c[y][ax] || (c[x][ax] == c[y][ax] && x < y); });
      next.push_back(mid);
      next.push_back(b);
    }
    cuts = std::move(next);
  }
}

// One cell on its own: its vertices compacted (meshoptimizer's work is per vertex of the buffer it is given), every
// border locked (the mesh's own and the cell's cut edges, so neighbouring cells still meet), simplified to about
// `target` faces. Returns the kept faces as indices of the whole mesh; *err: the error relative to the whole mesh.
std::vector<unsigned> simplify_cell(const Mesh& m, const uint32_t* faces, size_t n, size_t target, float max_error,
                                    float whole_scale, float* err) {
  *err = 0.0f;
  if (n == 0) return {};
  std::unordered_map<uint32_t, unsigned> local;
  local.reserve(n);
  std::vector<uint32_t> global;
  std::vector<Vec3> pos;
  std::vector<unsigned> idx;
  idx.reserve(3 * n);
  for (size_t i = 0; i < n; ++i)
    for (uint32_t v : m.triangles[faces[i]]) {
      auto [it, added] = local.try_emplace(v, unsigned(global.size()));
      if (added) {
        global.push_back(v);
        pos.push_back(m.positions[v]);
      }
      idx.push_back(it->second);
    }
  std::vector<unsigned> dst;
  float e = 0;
  // One pass at the loosest bound: the collapses still go cheapest first and stop at the target (a relaxing loop
  // would repeat whole passes for cells whose locked cut keeps them above it).
  simplify_relaxed(dst, idx, pos, 3 * target, max_error, max_error, meshopt_SimplifyLockBorder, &e);
  const float scale = meshopt_simplifyScale(pos[0].data(), pos.size(), sizeof(Vec3));
  *err = whole_scale > 0 ? e * scale / whole_scale : e;
  for (auto& v : dst) v = global[v];
  return dst;
}

}  // namespace

DecimateResult decimate_mesh(Mesh& mesh, const DecimateOptions& o) {
  DecimateResult r;
  r.faces_before = r.faces_after = mesh.face_count();
  r.vertices_before = r.vertices_after = mesh.vertex_count();
  if (o.max_faces == 0) throw Error("decimate_mesh: the face cap must be positive");
  if (mesh.face_count() <= o.max_faces) return r;
  const bool had_normals = !mesh.normals.empty();

  // Pre-reduction in cells (the result does not depend on the number of cores: the cells are fixed by the mesh).
  float cell_err = 0.0f;
  if (o.cells > 1 && mesh.face_count() >= std::max(o.cells_min_faces, 4 * o.max_faces)) {
    std::vector<uint32_t> order;
    std::vector<size_t> cuts;
    kd_cells(mesh, o.cells, order, cuts);
    const float whole = meshopt_simplifyScale(mesh.positions[0].data(), mesh.vertex_count(), sizeof(Vec3));
    const double keep = double(o.max_faces) * o.cell_overshoot / double(mesh.face_count());
    const int cells = int(cuts.size()) - 1;
    std::vector<std::vector<unsigned>> kept(cells);
    std::vector<float> errs(cells, 0.0f);
    const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int c = 0; c < cells; ++c) {
      const size_t n = cuts[c + 1] - cuts[c];
      kept[c] = simplify_cell(mesh, order.data() + cuts[c], n, std::max<size_t>(1, size_t(double(n) * keep)),
                              o.max_error, whole, &errs[c]);
    }
    size_t faces = 0;
    for (const auto& k : kept) faces += k.size() / 3;
    mesh.triangles.clear();
    mesh.triangles.reserve(faces);
    for (const auto& k : kept)
      for (size_t i = 0; i + 2 < k.size(); i += 3) mesh.triangles.push_back({k[i], k[i + 1], k[i + 2]});
    remove_unreferenced_vertices(mesh);  // the whole-mesh pass below works per vertex of the buffer
    cell_err = *std::max_element(errs.begin(), errs.end());
    r.cells = cells;
  }

  std::vector<unsigned> idx(mesh.face_count() * 3);
  for (size_t f = 0; f < mesh.face_count(); ++f)
    for (int q = 0; q < 3; ++q) idx[3 * f + q] = mesh.triangles[f][q];
  const size_t target = o.max_faces * 3;
  const unsigned flags = o.lock_border ? meshopt_SimplifyLockBorder : 0u;
  float err = 0.0f;
  std::vector<unsigned> dst = idx;  // the cells may already have met the cap
  size_t n = idx.size();
  if (n > target)
    n = simplify_relaxed(dst, idx, mesh.positions, target, std::max(o.target_error, 1e-6f), o.max_error, flags, &err);
  if (n > target) {
    dst.resize(idx.size());
    n = meshopt_simplifySloppy(dst.data(), idx.data(), idx.size(), mesh.positions[0].data(), mesh.vertex_count(),
                               sizeof(Vec3), target, 1e30f, &err);
    dst.resize(n);
    r.sloppy = true;
  }
  mesh.triangles.resize(n / 3);
  for (size_t f = 0; f < n / 3; ++f) mesh.triangles[f] = {dst[3 * f], dst[3 * f + 1], dst[3 * f + 2]};
  remove_degenerate_faces(mesh);  // collapses can leave back-to-back face pairs (non-manifold edges)
  remove_unreferenced_vertices(mesh);
  if (had_normals) compute_vertex_normals(mesh);
  r.faces_after = mesh.face_count();
  r.vertices_after = mesh.vertex_count();
  r.error = err + cell_err;
  return r;
}

}  // namespace cubeforge
