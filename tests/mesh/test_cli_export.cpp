// The command line writes a valid mesh for a golden model in every offered format: `cubeforge-gen mesh --golden`
// (the case's own tokens → mesh) and each file re-imports with the same vertex and face counts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cubeforge/mesh_io.h"
#include "test_paths.h"

namespace fs = std::filesystem;

namespace {

TEST(CliExport, GoldenCaseToEveryFormat) {
  const std::string bin = cftest::bin_dir() + "/cubeforge-gen";
  const std::string shared = cftest::shared_dir();
  const fs::path dir = fs::temp_directory_path() / ("cubeforge_cli_export_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"tiny_v01", "tiny_v05"}) {
    size_t verts = 0, faces = 0;
    for (const char* ext : {".glb", ".gltf", ".obj", ".ply", ".stl", ".fbx"}) {
      const fs::path out = dir / (std::string(name) + ext);
      const std::string cmd = bin + " mesh --golden " + shared + "/golden/cube3d/" + name + " --resolution 6 -o " +
                              out.string() + " > /dev/null";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      ASSERT_TRUE(fs::exists(out)) << out;
      auto m = cubeforge::import_mesh(out.string());
      EXPECT_GT(m.face_count(), 100u) << out;
      if (verts == 0) {
        verts = m.vertex_count();
        faces = m.face_count();
      }
      EXPECT_EQ(m.vertex_count(), verts) << out;
      EXPECT_EQ(m.face_count(), faces) << out;
    }
  }
  // A path that cannot be written gives an error and leaves nothing behind.
  const std::string bad = bin + " mesh --golden " + shared + "/golden/cube3d/tiny_v01 --resolution 5 -o " +
                          (dir / "missing_dir" / "x.glb").string() + " > /dev/null 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_FALSE(fs::exists(dir / "missing_dir"));
  fs::remove_all(dir);
}

}  // namespace
