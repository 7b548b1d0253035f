// `cubeforge-gen mesh`: shape tokens → mesh file, for a model directory with a token list (JSON array) or for a
// golden case with its own token_ids. Prints the stage timings; exercises every export format in the tests.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/safetensors.h"
#include "model_location.h"
#ifdef CUBEFORGE_HAVE_MESH_IO
#include "cubeforge/mesh_io.h"
#endif

namespace {

int run(int argc, char** argv) {
  CLI::App app{"Shape tokens → mesh file", argv[0]};
  std::string model_dir, golden, tokens_path, out, mode = "adaptive";
  int rb = 7, max_faces = 0;
  app.add_option("--model", model_dir, "model directory");
  app.add_option("--golden", golden, "golden case DIR/NAME: use its model and its token_ids");
  app.add_option("--tokens", tokens_path, "JSON file with the token ids (an array of integers)");
  app.add_option("-o,--output", out, "output mesh file (.glb .gltf .obj .ply .stl .fbx)")->required();
  app.add_option("--resolution", rb, "resolution base 4..9")->check(CLI::Range(4, 9));
  app.add_option("--mode", mode, "dense | adaptive")->check(CLI::IsMember({"dense", "adaptive"}));
  app.add_option("--max-faces", max_faces, "decimate to at most this many faces");
  CLI11_PARSE(app, argc, argv);
#ifndef CUBEFORGE_HAVE_MESH_IO
  throw cubeforge::Error("this build has no mesh export (configure with CUBEFORGE_WITH_MESH_IO=ON)");
#else
  if (!cubeforge::format_from_path(out)) throw cubeforge::Error("unknown output format '" + out + "'");
  std::unique_ptr<cubeforge::Cube3D> model;
  std::vector<int> tokens;
  if (!golden.empty()) {
    model = cubeforge::Cube3D::load(cubeforge::ModelFiles::from_golden_case(golden));
    for (auto t : cubeforge::SafeTensors::open(golden + "_io.safetensors").to_i64("token_ids")) tokens.push_back(int(t));
  } else {
    model = cubeforge::Cube3D::load(cubeforge::resolve_model_files(model_dir, "", argv[0]));
  }
  if (!tokens_path.empty()) {
    std::ifstream in(tokens_path);
    if (!in) throw cubeforge::Error("cannot read token file '" + tokens_path + "'");
    nlohmann::json j;
    try {
      in >> j;
      tokens = j.get<std::vector<int>>();
    } catch (const std::exception& e) {
      throw cubeforge::Error("token file '" + tokens_path + "' is not a JSON array of integers");
    }
  }
  if (tokens.empty()) throw cubeforge::Error("no tokens: give --tokens FILE or --golden DIR/NAME");
  cubeforge::MeshOptions mo;
  mo.resolution_base = rb;
  mo.mode = cubeforge::occupancy_mode_from_string(mode);
  cubeforge::GenerationStats st;
  auto mesh = model->tokens_to_mesh(tokens, mo, nullptr, &st);
  if (mesh.empty()) throw cubeforge::Error("the occupancy field has no surface at this resolution: nothing to export");
  if (max_faces > 0) {
    cubeforge::DecimateOptions d;
    d.max_faces = size_t(max_faces);
    cubeforge::decimate_mesh(mesh, d);
  }
  cubeforge::export_mesh(mesh, out);
  std::printf("latent decode %.1f ms | occupancy %.1f ms (%zu of %zu points) | meshing %.1f ms | clean-up %.1f ms\n",
              st.latent_ms, st.occupancy_ms, st.points_evaluated, st.points_dense, st.meshing_ms, st.cleanup_ms);
  std::printf("mesh: %zu vertices, %zu faces -> %s\n", mesh.vertex_count(), mesh.face_count(), out.c_str());
  return 0;
#endif
}

}  // namespace

CUBEFORGE_COMMAND("mesh", "shape tokens → mesh file (model + token list, or a golden case)", run);
