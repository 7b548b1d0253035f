// Mesh file I/O through Assimp: import of glb/gltf/obj/fbx/ply/stl (and whatever else Assimp reads) into
// cubeforge::Mesh parts with up-axis and unit normalisation, and export of a list of placed meshes to
// glb/gltf/obj/ply/stl/ASCII fbx. Errors are thrown as cubeforge::Error with the file name in the message.
#pragma once
#include "math.h"

#include <cubeforge/error.h>

#include <string>
#include <vector>

namespace cubeforge::editor {

enum class UpAxis { Auto, Y, Z };

struct ImportOptions {
  UpAxis up = UpAxis::Auto;       // Auto: the file's UpAxis metadata, else Z for .stl/.ply, else Y
  bool normalize_size = false;    // scale uniformly so the largest extent equals target_size
  float target_size = 4.f;
  float unit_scale = 1.f;         // applied after the up-axis conversion (e.g. 0.01 for centimetre files)
  bool base_center = false;       // move so the bounding box's bottom centre sits at the origin
};

struct ImportedPart {
  std::string name;
  std::shared_ptr<const Mesh> mesh;
  Vec3 color{0.8f, 0.8f, 0.8f};   // material diffuse colour (white-ish when the file has none)
};

struct ImportResult {
  std::vector<ImportedPart> parts;
  std::vector<std::string> warnings;
};

ImportResult import_mesh_file(const std::string& path, const ImportOptions& opt = {});
ImportResult import_mesh_memory(const void* data, size_t size, const std::string& ext_hint, const ImportOptions& opt = {});

// Loads a mesh file written by save_mesh_glb (or any file) as one merged mesh in file coordinates.
std::shared_ptr<const Mesh> load_mesh_merged(const std::string& path);

struct ExportItem {
  std::shared_ptr<const Mesh> mesh;
  glm::mat4 world{1.f};
  std::string name;
  Vec3 color{1.f, 1.f, 1.f};
};

// Assimp exporter id from a file extension: glb2, gltf2, obj, ply, stl, fbxa. Throws for unknown extensions.
std::string export_format_for(const std::string& path);
bool is_importable_extension(const std::string& path);
// Bakes each item's world matrix into its vertices, writes one node + material per item.
void export_meshes(const std::vector<ExportItem>& items, const std::string& path);
std::vector<uint8_t> export_meshes_blob(const std::vector<ExportItem>& items, const std::string& format_id);

}  // namespace cubeforge::editor
