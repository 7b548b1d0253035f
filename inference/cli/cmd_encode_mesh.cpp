// `cubeforge-gen encode-mesh`: an existing mesh file → shape tokens (reference §9: normalise, sample 8192 surface
// points with face normals, encoder + VQ), written as the JSON array `cubeforge-gen mesh --tokens` reads; optionally
// the tokens decoded again (`--reconstruct`) and placed in the input's frame, with the Chamfer distance of the round
// trip, so a user can see how well the model's vocabulary represents the mesh.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "command.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/encoder_input.h"
#include "cubeforge/error.h"
#include "cubeforge/mesh_metrics.h"
#include "cubeforge/safetensors_writer.h"
#include "cubeforge/shape_model.h"
#include "model_location.h"
#ifdef CUBEFORGE_HAVE_MESH_IO
#include "cubeforge/mesh_io.h"
#endif

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int run(int argc, char** argv) {
  CLI::App app{"Mesh file → shape tokens (the shape encoder)", argv[0]};
  std::string model_dir, mesh_path, out, recon, mode = "adaptive";
  size_t points = 8192;
  uint64_t seed = 0;
  int rb = 7;
  app.add_option("--model", model_dir, "model directory (its shape tokenizer must hold the encoder)");
  app.add_option("--mesh", mesh_path, "input mesh (any format Assimp reads: .glb .gltf .obj .ply .stl .fbx ...)")
      ->required();
  app.add_option("-o,--output", out, "write the token ids here (JSON array); default: print them");
  app.add_option("--points", points, "surface points given to the encoder")->check(CLI::Range(size_t(1), size_t(1) << 20));
  app.add_option("--seed", seed, "surface-sampling seed");
  app.add_option("--reconstruct", recon, "also decode the tokens to this mesh file (in the input's frame)");
  app.add_option("--resolution", rb, "resolution base of the reconstruction, 4..9")->check(CLI::Range(4, 9));
  app.add_option("--mode", mode, "occupancy mode of the reconstruction: dense | adaptive")
      ->check(CLI::IsMember({"dense", "adaptive"}));
  CLI11_PARSE(app, argc, argv);
#ifndef CUBEFORGE_HAVE_MESH_IO
  throw cubeforge::Error("this build has no mesh import (configure with CUBEFORGE_WITH_MESH_IO=ON)");
#else
  if (!recon.empty() && !cubeforge::format_from_path(recon))
    throw cubeforge::Error("unknown reconstruction format '" + recon + "'");
  const auto t0 = std::chrono::steady_clock::now();
  const cubeforge::Mesh mesh = cubeforge::import_mesh(mesh_path);
  auto model = cubeforge::Cube3D::load(cubeforge::resolve_model_files(model_dir, "", argv[0]));
  const double load_ms = ms_since(t0);

  auto t = std::chrono::steady_clock::now();
  cubeforge::EncoderInputOptions eo;
  eo.points = points;
  eo.seed = seed;
  const cubeforge::EncoderInput in = cubeforge::make_encoder_input(mesh, eo);
  const double sample_ms = ms_since(t);
  t = std::chrono::steady_clock::now();
  const std::vector<int> ids = model->shape_model().encode(in.points, in.normals);
  const double encode_ms = ms_since(t);
  const std::set<int> distinct(ids.begin(), ids.end());

  std::fprintf(stderr, "mesh: %zu vertices, %zu faces (%zu used, %zu degenerate and %zu duplicate dropped)\n",
               mesh.vertex_count(), mesh.face_count(), in.faces_used, in.faces_degenerate, in.faces_duplicate);
  std::fprintf(stderr, "normalised: centre (%.4g, %.4g, %.4g), scale %.6g; %zu surface points (seed %llu)\n",
               in.center[0], in.center[1], in.center[2], in.scale, in.points.size(), (unsigned long long)seed);
  std::fprintf(stderr, "load %.0f ms | sampling %.1f ms | encoder + VQ %.1f ms | %zu tokens, %zu distinct codes\n",
               load_ms, sample_ms, encode_ms, ids.size(), distinct.size());
  const std::string text = nlohmann::json(ids).dump() + "\n";
  if (out.empty()) std::fputs(text.c_str(), stdout);
  else {
    cubeforge::write_file_atomic(out, text);
    std::fprintf(stderr, "tokens -> %s\n", out.c_str());
  }

  if (!recon.empty()) {
    cubeforge::MeshOptions mo;
    mo.resolution_base = rb;
    mo.mode = cubeforge::occupancy_mode_from_string(mode);
    cubeforge::GenerationStats st;
    cubeforge::Mesh back = model->tokens_to_mesh(ids, mo, nullptr, &st);
    if (back.empty()) throw cubeforge::Error("the decoded occupancy field has no surface at this resolution: nothing to write");
    // round-trip distance in the normalised frame (the shape spans [-0.96, 0.96] on its longest side)
    const auto cd = cubeforge::chamfer_distance(cubeforge::sample_surface(back, in.points.size(), seed + 1), in.points);
    cubeforge::to_input_frame(back, in);
    cubeforge::export_mesh(back, recon);
    std::fprintf(stderr, "reconstruction: %zu vertices, %zu faces -> %s (decode %.0f ms); Chamfer to the input %.4f "
                 "(Hausdorff %.4f) in the normalised frame, longest side 1.92\n",
                 back.vertex_count(), back.face_count(), recon.c_str(),
                 st.latent_ms + st.occupancy_ms + st.meshing_ms + st.cleanup_ms, cd.chamfer, cd.hausdorff);
  }
  return 0;
#endif
}

}  // namespace

CUBEFORGE_COMMAND("encode-mesh", "mesh file → shape tokens through the shape encoder (and back, --reconstruct)", run);
