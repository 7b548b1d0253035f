// Scene documents: a human-readable JSON file (.cfscene) that references its meshes, which are stored beside it as
// content-addressed .glb files in "<stem>_meshes/". Every file is written atomically (temporary + fsync + rename),
// mesh files first and the scene document last, so a crash or a failed write never corrupts the saved scene.
// Loading tolerates missing/corrupt mesh files: those entities get a placeholder block and keep their reference.
#pragma once
#include "fileio/atomic_file.h"
#include "scene.h"

#include <cubeforge/error.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace cubeforge::editor {

// Reads and parses a JSON file. Throws cubeforge::Error naming it as `what` (e.g. "scene", "script") when the file
// cannot be opened (with the system's reason) or is not valid JSON (with the parser's position).
nlohmann::json read_json_file(const std::string& path, const std::string& what);

struct SaveStats {
  size_t meshes_written = 0;
  size_t meshes_reused = 0;
};

SaveStats save_scene(const Scene& scene, const std::string& path, const fileio::FaultHook& hook = {});

struct LoadReport {
  std::vector<std::string> warnings;
  size_t missing_meshes = 0;
};

// Throws cubeforge::Error when the document itself is unreadable; missing meshes only produce warnings.
Scene load_scene(const std::string& path, LoadReport& report);

// Content hash of a mesh (cached per shared mesh), used for mesh file names.
uint64_t mesh_hash(const std::shared_ptr<const Mesh>& mesh);

}  // namespace cubeforge::editor
