// Default model resolution for the CLI (see model_location.h).
#include "model_location.h"

#include <cstdlib>
#include <filesystem>

#include "cubeforge/error.h"

namespace cubeforge {

ModelFiles resolve_model_files(const std::string& model_dir, const std::string& clip_dir, const char* argv0) {
  namespace fs = std::filesystem;
  if (!model_dir.empty()) return ModelFiles::from_directory(model_dir, clip_dir);
  if (const char* e = std::getenv("CUBEFORGE_MODEL_DIR")) return ModelFiles::from_directory(e, clip_dir);
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path() / ".." / ".." / "assets" / "default-model");
  (void)argv0;
  candidates.push_back(fs::path("assets") / "default-model");
  for (const auto& c : candidates)
    if (fs::is_directory(c)) return ModelFiles::from_directory(c.lexically_normal().string(), clip_dir);
  throw Error("no model given and the default model (assets/default-model) was not found; pass --model DIR");
}

}  // namespace cubeforge
