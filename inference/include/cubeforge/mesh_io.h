// Mesh export/import through Assimp and decimation through meshoptimizer (library cubeforge_meshio, built when
// CUBEFORGE_WITH_MESH_IO is on; CUBEFORGE_HAVE_MESH_IO is defined for its users).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cubeforge/mesh.h"

namespace cubeforge {

enum class MeshFormat {
  Glb,       // binary glTF 2 (Assimp "glb2")
  Gltf,      // glTF 2 JSON + <stem>.bin beside it ("gltf2")
  Obj,       // Wavefront OBJ + <stem>.mtl beside it ("obj")
  Ply,       // ASCII PLY ("ply"; assimp 5.2 cannot re-read its own binary PLY with vertex colours)
  Stl,       // binary STL ("stlb"); positions only
  FbxAscii,  // ASCII FBX ("fbxa"). Binary FBX is not offered: Debian's assimp 5.2.5 writes corrupt files.
};

const char* format_extension(MeshFormat f);                     // ".glb", ".gltf", ".obj", ".ply", ".stl", ".fbx"
std::optional<MeshFormat> format_from_path(const std::string& path);  // by extension, case-insensitive
std::vector<MeshFormat> export_formats();

struct ExportOptions {
  std::optional<MeshFormat> format;      // default: from the path's extension (Error if unknown)
  std::string mesh_name = "cubeforge_mesh";
  std::string material_name = "cubeforge_material";
  Vec3 base_color{0.8f, 0.8f, 0.8f};
};

// Writes the mesh (positions, normals and colours when present; exactly one aiMaterial). Every file is first
// written into a fresh temporary directory beside the target and then renamed into place (companion files such
// as .bin/.mtl first, the main file last), so a failure never leaves a partial file behind. Throws Error with the
// path and the reason (unknown extension, missing or unwritable directory, exporter failure, empty mesh).
void export_mesh(const Mesh& mesh, const std::string& path, const ExportOptions& options = {});

struct ImportOptions {
  bool weld = true;  // after import, weld vertices at identical positions (STL/flat-shaded files) and rebuild normals
};
// Reads any format Assimp knows (Triangulate | JoinIdenticalVertices), all meshes merged with their node
// transforms applied (normals by the inverse transpose). Colours from the first colour set. Throws Error.
Mesh import_mesh(const std::string& path, const ImportOptions& options = {});

struct DecimateOptions {
  size_t max_faces = 10000;
  float target_error = 0.01f;   // first relative error bound (of the mesh extent); relaxed x4 until the cap is met
  float max_error = 1.0f;       // give up relaxing at this bound, then fall back to sloppy simplification
  bool lock_border = false;     // keep open borders (meshopt_SimplifyLockBorder)
  // Large meshes (>= cells_min_faces and >= 4x the cap) are first reduced in `cells` k-d cells of equal face counts
  // on all cores (OpenMP), each to cell_overshoot x its share of the cap with its cut edges locked, then finished
  // as a whole. The cells depend on the mesh only, so the result does not depend on the number of cores. 1: off.
  int cells = 8;
  size_t cells_min_faces = 65536;
  float cell_overshoot = 1.5f;
  int threads = 0;              // threads for the cells (0: OpenMP's default, all cores)
};
struct DecimateResult {
  size_t faces_before = 0, faces_after = 0;
  size_t vertices_before = 0, vertices_after = 0;
  float error = 0.0f;           // meshoptimizer's relative error of the result (cells: their largest + the final pass's)
  bool sloppy = false;          // the topology-preserving simplifier could not reach the cap
  int cells = 0;                // cells of the parallel pre-reduction (0: one pass over the whole mesh)
};
// Simplifies in place to at most max_faces faces (no-op when already below), then removes the degenerate and
// back-to-back faces the collapses can leave (remove_degenerate_faces) and unreferenced vertices; keeps colours,
// recomputes smooth normals when the mesh had normals.
DecimateResult decimate_mesh(Mesh& mesh, const DecimateOptions& options = {});

}  // namespace cubeforge
