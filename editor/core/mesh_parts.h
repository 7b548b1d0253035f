// Splitting a mesh into its connected parts (Edit > Separate parts): a generated object arrives as one mesh, and a
// level designer who wants to move the chair's legs needs them as entities of their own. Pure mesh code, no scene.
#pragma once
#include <cstddef>  // cubeforge/mesh.h uses size_t without including it
#include <cubeforge/mesh.h>

#include <vector>

namespace cubeforge::editor {

// The mesh's connected parts as separate meshes: faces are joined by shared corners, and corners at bit-identical
// positions count as shared (a flat-shaded mesh repeats each corner per face and must not fall apart along its
// edges). Parts are ordered by their first face, faces keep their order, each part's vertices are renumbered in
// first-use order and keep their normals and colours. A mesh without faces gives no part.
std::vector<Mesh> split_parts(const Mesh& mesh);

// The base centre of a mesh (x/z centre of its bounding box, lowest y): the pivot each separated part gets, as the
// AI sidebar gives generated objects (Y up, standing on the ground).
Vec3 base_centre(const Mesh& mesh);

}  // namespace cubeforge::editor
