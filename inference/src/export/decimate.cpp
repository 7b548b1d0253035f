// Owns decimation to a face cap with meshoptimizer (topology-preserving meshopt_simplify with a relaxing error
// bound, sloppy simplification only as the last resort).
#include <meshoptimizer.h>

#include <algorithm>

#include "cubeforge/error.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/mesh_io.h"

namespace cubeforge {

DecimateResult decimate_mesh(Mesh& mesh, const DecimateOptions& o) {
  DecimateResult r;
  r.faces_before = r.faces_after = mesh.face_count();
  r.vertices_before = r.vertices_after = mesh.vertex_count();
  if (o.max_faces == 0) throw Error("decimate_mesh: the face cap must be positive");
  if (mesh.face_count() <= o.max_faces) return r;

  std::vector<unsigned> idx(mesh.face_count() * 3), dst(idx.size());
  for (size_t f = 0; f < mesh.face_count(); ++f)
    for (int q = 0; q < 3; ++q) idx[3 * f + q] = mesh.triangles[f][q];
  const size_t target = o.max_faces * 3;
  const float* pos = mesh.positions[0].data();
  const unsigned flags = o.lock_border ? meshopt_SimplifyLockBorder : 0u;
  float err = 0.0f, bound = std::max(o.target_error, 1e-6f);
  size_t n = 0;
  for (;;) {
    n = meshopt_simplify(dst.data(), idx.data(), idx.size(), pos, mesh.vertex_count(), sizeof(Vec3), target, bound,
                         flags, &err);
    if (n <= target || bound >= o.max_error) break;
    bound = std::min(bound * 4.0f, o.max_error);
  }
  if (n > target) {
    n = meshopt_simplifySloppy(dst.data(), idx.data(), idx.size(), pos, mesh.vertex_count(), sizeof(Vec3), target,
                               1e30f, &err);
    r.sloppy = true;
  }
  mesh.triangles.resize(n / 3);
  for (size_t f = 0; f < n / 3; ++f) mesh.triangles[f] = {dst[3 * f], dst[3 * f + 1], dst[3 * f + 2]};
  const bool had_normals = !mesh.normals.empty();
  remove_degenerate_faces(mesh);  // collapses can leave back-to-back face pairs (non-manifold edges)
  remove_unreferenced_vertices(mesh);
  if (had_normals) compute_vertex_normals(mesh);
  r.faces_after = mesh.face_count();
  r.vertices_after = mesh.vertex_count();
  r.error = err;
  return r;
}

}  // namespace cubeforge
