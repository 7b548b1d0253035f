// Test helpers for the editor core tests: temporary directories and small meshes.
#pragma once
#include <cstddef>  // cubeforge/mesh.h uses size_t without including it
#include <cubeforge/mesh.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <unistd.h>

namespace cftest {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("cf-editor-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// A tetrahedron with vertex colours (4 vertices, 4 faces) translated by (dx,0,0).
inline std::shared_ptr<const cubeforge::Mesh> tetra(float dx = 0.f) {
  auto m = std::make_shared<cubeforge::Mesh>();
  m->positions = {{0 + dx, 0, 0}, {1 + dx, 0, 0}, {0 + dx, 1, 0}, {0 + dx, 0, 1}};
  m->colors = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}};
  m->triangles = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
  return m;
}

}  // namespace cftest
