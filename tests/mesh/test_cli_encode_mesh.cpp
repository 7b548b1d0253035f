// `cubeforge-gen encode-mesh`: a mesh file → the default model's token list (the JSON array `mesh --tokens` reads),
// the round trip back to a mesh placed in the input's frame, and bad input (missing or corrupt mesh, unwritable
// output) failing with a message while leaving nothing behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cubeforge/mesh_io.h"
#include "test_paths.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(CliEncodeMesh, MeshToTokensAndBack) {
  const std::string bin = cftest::bin_dir() + "/cubeforge-gen";
  const std::string model = cftest::source_dir() + "/assets/default-model";
  const fs::path dir = fs::temp_directory_path() / ("cubeforge_cli_encode_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // the input: the default model's first reference shape, moved and scaled away from the model's frame
  const fs::path src = dir / "chair.obj", tokens = dir / "chair.json", tokens2 = dir / "again.json",
                 back = dir / "back.glb";
  {
    std::ofstream t(dir / "ref.json");
    t << "[";
    const std::string ref = slurp(model + "/reference_tokens.json");
    const size_t a = ref.find("\"tokens\""), b = ref.find('[', a), e = ref.find(']', b);
    t << ref.substr(b + 1, e - b - 1) << "]";
  }
  std::string cmd = bin + " mesh --model " + model + " --tokens " + (dir / "ref.json").string() +
                    " --resolution 6 -o " + (dir / "ref.glb").string() + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  cubeforge::Mesh m = cubeforge::import_mesh((dir / "ref.glb").string());
  for (auto& p : m.positions)
    for (int q = 0; q < 3; ++q) p[q] = 40.f * p[q] + 100.f;
  cubeforge::export_mesh(m, src.string());

  cmd = bin + " encode-mesh --model " + model + " --mesh " + src.string() + " -o " + tokens.string() +
        " --reconstruct " + back.string() + " --resolution 6 2> " + (dir / "log.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << slurp(dir / "log.txt");
  const std::string ids = slurp(tokens);
  ASSERT_EQ(ids.front(), '[');
  EXPECT_EQ(std::count(ids.begin(), ids.end(), ','), 63) << ids;  // the default model's 64 tokens
  EXPECT_NE(slurp(dir / "log.txt").find("Chamfer"), std::string::npos);
  // the reconstruction sits where the input was (bounding boxes agree to a few % of the 80-unit size)
  const cubeforge::Mesh r = cubeforge::import_mesh(back.string());
  ASSERT_GT(r.face_count(), 100u);
  for (int q = 0; q < 3; ++q) {
    float lo_m = 1e9f, hi_m = -1e9f, lo_r = 1e9f, hi_r = -1e9f;
    for (const auto& p : m.positions) lo_m = std::min(lo_m, p[q]), hi_m = std::max(hi_m, p[q]);
    for (const auto& p : r.positions) lo_r = std::min(lo_r, p[q]), hi_r = std::max(hi_r, p[q]);
    EXPECT_NEAR(lo_r, lo_m, 8.f) << "axis " << q;
    EXPECT_NEAR(hi_r, hi_m, 8.f) << "axis " << q;
  }
  // deterministic: the same file and seed give the same tokens; the list feeds `mesh --tokens`
  cmd = bin + " encode-mesh --model " + model + " --mesh " + src.string() + " -o " + tokens2.string() + " 2> /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(slurp(tokens2), ids);
  cmd = bin + " mesh --model " + model + " --tokens " + tokens.string() + " --resolution 5 -o " +
        (dir / "again.glb").string() + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;

  // bad input: a missing mesh, a corrupt one, an unwritable output; each fails with a message and writes nothing
  std::ofstream(dir / "corrupt.glb") << "glTF this is not";
  for (const std::string& mesh : {(dir / "none.obj").string(), (dir / "corrupt.glb").string()}) {
    const fs::path out = dir / "bad.json";
    cmd = bin + " encode-mesh --model " + model + " --mesh " + mesh + " -o " + out.string() + " 2> " +
          (dir / "err.txt").string();
    EXPECT_NE(std::system(cmd.c_str()), 0) << cmd;
    EXPECT_NE(slurp(dir / "err.txt").find("error"), std::string::npos) << slurp(dir / "err.txt");
    EXPECT_FALSE(fs::exists(out));
  }
  cmd = bin + " encode-mesh --model " + model + " --mesh " + src.string() + " -o " +
        (dir / "missing_dir" / "t.json").string() + " > /dev/null 2>&1";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  EXPECT_FALSE(fs::exists(dir / "missing_dir"));
  fs::remove_all(dir);
}

}  // namespace
