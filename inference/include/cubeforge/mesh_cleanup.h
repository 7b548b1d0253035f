// Mesh clean-up after marching cubes (the reference's §8.6 post-processing minus decimation, which lives in
// mesh_io.h): duplicate/degenerate removal, small-component filter, smooth normals, pivot, and mesh statistics.
#pragma once
#include <cstddef>

#include "cubeforge/mesh.h"

namespace cubeforge {

enum class Pivot {
  None,
  BaseCentre,  // bbox centre on x and z at 0, min y at 0 (object stands on the ground plane)
  Centre,      // bbox centre at the origin
};

struct CleanupOptions {
  bool merge_vertices = true;          // weld vertices with identical positions (see merge_duplicate_vertices)
  float merge_epsilon = 0.0f;          // > 0: weld positions within this distance (grid snapping)
  bool remove_degenerate = true;       // faces with repeated corners or zero area, duplicate faces
  float min_component_ratio = 0.15f;   // drop components whose bbox diagonal < ratio * mesh diagonal; 0 keeps all
  bool compute_normals = true;         // area-weighted smooth vertex normals
  Pivot pivot = Pivot::None;
};

struct CleanupReport {
  size_t vertices_merged = 0;
  size_t degenerate_faces_removed = 0;
  size_t components = 0;               // before the filter
  size_t components_removed = 0;
  size_t faces_removed_with_components = 0;
  size_t unreferenced_vertices_removed = 0;
  Vec3 pivot_translation{0, 0, 0};     // added to every position
};

// Runs the steps enabled in `options` in this order: merge, degenerate, components, unreferenced, normals, pivot.
CleanupReport cleanup_mesh(Mesh& mesh, const CleanupOptions& options = {});

// Welds vertices with bit-identical positions (epsilon 0) or positions in the same epsilon cell (epsilon > 0);
// the first vertex of a group is kept with its normal/colour. Returns the number of vertices removed.
size_t merge_duplicate_vertices(Mesh& mesh, float epsilon = 0.0f);
// Removes faces with a repeated corner, zero area (exactly collinear corners) and repeated faces (same corner
// set): copies with the same orientation keep the first; faces of opposite orientation on the same corners (a
// fold) cancel pairwise, so a back-to-back pair disappears entirely. Returns the number of faces removed.
// Vertices are kept (see remove_unreferenced_vertices).
size_t remove_degenerate_faces(Mesh& mesh);
// Removes connected components (sharing vertices) whose bbox diagonal < ratio * whole-mesh bbox diagonal.
// Returns the number of components removed.
size_t remove_small_components(Mesh& mesh, float ratio = 0.15f);
size_t remove_unreferenced_vertices(Mesh& mesh);
// Area-weighted smooth normals (sum of face cross products, normalised); unreferenced vertices get (0, 0, 1).
void compute_vertex_normals(Mesh& mesh);
// Translates the mesh as `pivot` says; returns the translation.
Vec3 apply_pivot(Mesh& mesh, Pivot pivot);
size_t count_components(const Mesh& mesh);

struct MeshStats {
  size_t vertices = 0, faces = 0, components = 0;
  double area = 0.0;
  double volume = 0.0;              // signed (positive for a closed mesh with outward normals)
  bool watertight = false;          // every edge used by exactly two faces, in opposite directions
  size_t boundary_edges = 0;        // undirected edges used once
  size_t non_manifold_edges = 0;    // used more than twice or twice in the same direction
  Vec3 bbox_min{0, 0, 0}, bbox_max{0, 0, 0};
  double bbox_diagonal() const;
};
MeshStats mesh_stats(const Mesh& mesh);

}  // namespace cubeforge
