// Studio-style parts generated in code: block, sphere, cylinder, wedge. Unit size (1x1x1) centred on the origin;
// the entity's scale gives the part its size. Flat normals on hard edges, smooth on curved surfaces.
#pragma once
#include <cstddef>  // cubeforge/mesh.h uses size_t without including it
#include <cubeforge/mesh.h>

#include <memory>
#include <string>

namespace cubeforge::editor {

enum class PartKind { Block, Sphere, Cylinder, Wedge };

const char* part_name(PartKind k);                   // "Block", ...
std::string part_source(PartKind k);                 // "primitive:block"
bool part_from_source(const std::string& src, PartKind& out);
std::shared_ptr<const Mesh> make_part_mesh(PartKind k);  // cached per kind (shared)

}  // namespace cubeforge::editor
