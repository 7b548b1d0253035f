// `cubeforge-gen generate`: prompt → shape tokens → mesh file, with a terminal progress bar, live-preview
// statistics and a stage timing breakdown (text, GPT, latent decode, occupancy, meshing, clean-up, decimation,
// export); `--json` prints the statistics as JSON on stdout. `--variations N` makes N shapes of one prompt (seeds
// seed..seed+N-1, decoded together on a GPU), written as FILE_v0.ext ... FILE_v<N-1>.ext.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "command.h"
#include "stats_util.h"
#include "cubeforge/cuda_backend.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "model_location.h"
#ifdef CUBEFORGE_HAVE_MESH_IO
#include "cubeforge/mesh_io.h"
#endif

namespace {

using cubeforge::cli::fnv1a;
using cubeforge::cli::percentile;

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Output path of variation v of `count`: FILE itself for one, FILE_v<v>.ext for several.
std::string variation_path(const std::string& out, int v, int count) {
  if (out.empty() || count == 1) return out;
  const fs::path p(out);
  return (p.parent_path() / (p.stem().string() + "_v" + std::to_string(v) + p.extension().string())).string();
}

// One finished shape after decimation and export.
struct Written {
  double decimate_ms = 0, export_ms = 0;
  size_t faces_before = 0;
  std::string path;
};

Written decimate_and_export(cubeforge::Mesh& mesh, int max_faces, const std::string& path) {
  Written w;
  w.faces_before = mesh.face_count();
  w.path = path;
#ifdef CUBEFORGE_HAVE_MESH_IO
  if (max_faces > 0 && !mesh.empty()) {
    const auto t = Clock::now();
    cubeforge::DecimateOptions d;
    d.max_faces = size_t(max_faces);
    cubeforge::decimate_mesh(mesh, d);
    w.decimate_ms = ms_since(t);
  }
  if (!path.empty()) {
    if (mesh.empty()) throw cubeforge::Error("the generated field has no surface: nothing to export (" + path + ")");
    const auto t = Clock::now();
    cubeforge::export_mesh(mesh, path);
    w.export_ms = ms_since(t);
  }
#else
  (void)max_faces;
#endif
  return w;
}

int run(int argc, char** argv) {
  CLI::App app{"Generate a 3D mesh from a text prompt", argv[0]};
  std::string model_dir, clip_dir, prompt, negative_prompt, out, mode = "adaptive", attention = "reference", bbox_s, backend = "auto";
  int rb = 6, max_faces = 0, preview_every = 0, threads = 0, coarse_rb = 5;
  float margin = cubeforge::MeshOptions{}.adaptive_margin;
  bool fixed_margin = false;
  uint64_t seed = 0;
  float guidance = 3.0f, top_p = -1;
  bool json = false, tokens_only = false, base_pivot = false, no_output = false, warm_up = false;
  int repeat = 1, variations = 1;
  app.add_option("--model", model_dir, "model directory (default: the shipped default model)");
  app.add_option("--clip", clip_dir, "CLIP text model directory (default: <model>/clip)");
  app.add_option("--prompt,-p", prompt, "text prompt")->required();
  app.add_option("--negative-prompt", negative_prompt,
                 "what the shape should not be: guidance steers away from it (needs guidance > 0)");
  app.add_option("-o,--output", out, "output mesh file (.glb .gltf .obj .ply .stl .fbx)");
  app.add_option("--resolution", rb, "resolution base rb: (2^rb+1)^3 grid, 4..9")->check(CLI::Range(4, 9));
  app.add_option("--mode", mode, "occupancy evaluation: dense | adaptive")->check(CLI::IsMember({"dense", "adaptive"}));
  app.add_option("--margin", margin, "adaptive: refine cells with a corner |logit| below this (0: sign changes only)");
  app.add_flag("--fixed-margin", fixed_margin,
               "adaptive: the former rule (same margin at every level, dilation 1) instead of the level-scaled one");
  app.add_option("--coarse-resolution", coarse_rb, "adaptive: level evaluated in full")->check(CLI::Range(4, 9));
  app.add_option("--max-faces", max_faces, "decimate to at most this many faces (0: no decimation)");
  app.add_option("--bbox", bbox_s, "bounding box x,y,z (v0.5-layout models)");
  app.add_option("--seed", seed, "seed for top-p sampling");
  app.add_option("--guidance", guidance, "classifier-free guidance scale (0 disables)");
  app.add_option("--top-p", top_p, "nucleus sampling p in (0,1]; omit for greedy");
  app.add_option("--variations", variations, "shapes of this prompt, seeds seed..seed+N-1 (needs --top-p); decoded "
                                             "together on a GPU; -o FILE.ext writes FILE_v0.ext ...")
      ->check(CLI::Range(1, cubeforge::kMaxVariations));
  app.add_option("--attention", attention, "single-block decode attention: reference | causal")
      ->check(CLI::IsMember({"reference", "causal"}));
  app.add_option("--preview-every", preview_every, "build a live preview every K tokens (statistics only)");
  app.add_option("--threads", threads, "CPU threads (0: all cores)");
  app.add_option("--backend", backend, "token loop: auto (CUDA when usable) | cpu | cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_flag("--base-pivot", base_pivot, "centre x/z and put the lowest point at y=0");
  app.add_flag("--tokens-only", tokens_only, "stop after the shape tokens");
  app.add_flag("--no-output", no_output, "build the mesh but write no file (benchmarks, builds without mesh export)");
  app.add_option("--repeat", repeat, "generate this many times in one process; the last run is reported, every run's "
                                     "total in runs_total_ms (the first includes warm-up)")
      ->check(CLI::Range(1, 100));
  app.add_flag("--warm-up", warm_up, "pay the backends' one-time costs after loading (Cube3D::warm_up, as the editor "
                                     "does), reported as warm_up_ms, so the first run is a warm one");
  app.add_flag("--json", json, "print statistics as JSON");
  CLI11_PARSE(app, argc, argv);

  cubeforge::set_cpu_threads(threads);
  cubeforge::GenerationRequest req;
  req.prompt = prompt;
  req.negative_prompt = negative_prompt;
  req.seed = seed;
  req.guidance = guidance;
  if (top_p >= 0) req.top_p = top_p;
  req.variations = variations;
  req.attention = cubeforge::attention_mode_from_string(attention);
  if (!bbox_s.empty()) {
    std::array<float, 3> b{};
    if (std::sscanf(bbox_s.c_str(), "%f,%f,%f", &b[0], &b[1], &b[2]) != 3) throw cubeforge::Error("--bbox must be x,y,z");
    req.bbox = b;
  }
  cubeforge::MeshOptions mopt;
  mopt.resolution_base = rb;
  mopt.mode = cubeforge::occupancy_mode_from_string(mode);
  mopt.base_pivot = base_pivot;
  mopt.adaptive_margin = margin;
  if (fixed_margin) {
    mopt.adaptive_scale_margin = false;
    mopt.adaptive_final_dilation = -1;
  }
  mopt.coarse_resolution_base = coarse_rb;
#ifndef CUBEFORGE_HAVE_MESH_IO
  if (!out.empty()) throw cubeforge::Error("this build has no mesh export (configure with CUBEFORGE_WITH_MESH_IO=ON)");
#endif
  if (!tokens_only && !no_output && out.empty()) throw cubeforge::Error("give -o FILE (or --tokens-only or --no-output)");
  if (no_output && !out.empty()) throw cubeforge::Error("--no-output and -o FILE contradict each other");
#ifdef CUBEFORGE_HAVE_MESH_IO
  if (!out.empty() && !cubeforge::format_from_path(out))
    throw cubeforge::Error("unknown output format '" + out + "' (use .glb .gltf .obj .ply .stl .fbx)");
#endif

  const auto t_load = Clock::now();
  auto model = cubeforge::Cube3D::load(cubeforge::resolve_model_files(model_dir, clip_dir, argv[0]));
  const std::string backend_line = cubeforge::enable_best_backend(*model, backend);
  const double load_ms = ms_since(t_load);
  const double warm_up_ms = warm_up ? model->warm_up() : 0.0;
  if (!json) std::fprintf(stderr, "backend: %s\n", backend_line.c_str());
  cubeforge::validate_request(req, model->config());
  for (const auto& w : model->unknown_words(prompt)) std::fprintf(stderr, "warning: the model does not know '%s'\n", w.c_str());

  const int N = model->config().num_tokens();
  const bool tty = isatty(STDERR_FILENO) && !json;
  auto on_token = [&](const cubeforge::TokenEvent& e) {
    // Variations decode together on a GPU (the bar follows the last one reported), in turn on the CPU.
    if (!tty || (e.index + 1) % std::max(1, N / 50) != 0) return;
    const int w = 40, done = (e.index + 1) * w / N;
    std::fprintf(stderr, "\r[%.*s%*s] %d/%d tokens %.0f ms%s", done, "########################################", w - done, "",
                 e.index + 1, N, e.elapsed_ms,
                 variations > 1 ? (" (variation " + std::to_string(e.variation) + ")").c_str() : "");
    std::fflush(stderr);
  };
  cubeforge::PreviewOptions popt;
  popt.every = preview_every;
  int preview_faces = 0;
  auto on_preview = [&](int, const cubeforge::Mesh& m) { preview_faces = int(m.face_count()); };

  std::vector<cubeforge::ShapeResult> results;
  std::vector<double> runs_total_ms;
  for (int run = 0; run < repeat; ++run) {
    results.clear();
    if (tokens_only) {
      for (auto& tr : model->generate_token_variations(req, on_token)) {
        tr.stats.total_ms = tr.stats.gpt_ms + tr.stats.text_ms;
        results.push_back(cubeforge::ShapeResult{std::move(tr.tokens), {}, std::move(tr.stats)});
      }
    } else {
      results = model->generate_variations(req, mopt, on_token,
                                           preview_every > 0 ? cubeforge::PreviewCallback(on_preview) : nullptr, popt);
    }
    runs_total_ms.push_back(results.back().stats.total_ms);
  }
  if (tty) std::fprintf(stderr, "\n");
  std::vector<Written> written;
  for (int v = 0; v < int(results.size()); ++v)
    written.push_back(decimate_and_export(results[v].mesh, tokens_only ? 0 : max_faces, variation_path(out, v, variations)));
  const auto& res = results.front();
  const double decimate_ms = written.front().decimate_ms, export_ms = written.front().export_ms;
  const size_t faces_before = written.front().faces_before;
  const auto& s = res.stats;
  const std::vector<double> steps = s.token_gaps_ms();
  // Mean decode step: the GPT stage after prefill over its N steps (the BOS step yields token 0). p50/p95 are the gaps
  // between token times (on the CUDA path: device step times, spread evenly within each captured graph chunk).
  const double tpot_mean = res.tokens.empty() ? 0 : (s.gpt_ms - s.prefill_ms) / double(res.tokens.size());
  nlohmann::json j = {
      {"prompt", prompt},          {"negative_prompt", negative_prompt}, {"tokens", res.tokens.size()}, {"backend", s.backend},
      {"text_backend", s.text_backend}, {"shape_backend", s.shape_backend}, {"runs_total_ms", runs_total_ms},
      {"load_ms", load_ms},        {"warm_up_ms", warm_up_ms},          {"text_ms", s.text_ms},              {"prefill_ms", s.prefill_ms},
      {"ttft_ms", s.ttft_ms},      {"gpt_ms", s.gpt_ms},                {"tpot_mean_ms", tpot_mean}, {"tpot_p50_ms", percentile(steps, 0.5)},
      {"tpot_p95_ms", percentile(steps, 0.95)}, {"latent_decode_ms", s.latent_ms}, {"occupancy_ms", s.occupancy_ms},
      {"meshing_ms", s.meshing_ms}, {"cleanup_ms", s.cleanup_ms},       {"decimate_ms", decimate_ms},
      {"export_ms", export_ms},    {"total_ms", s.total_ms + decimate_ms + export_ms},
      {"points_evaluated", s.points_evaluated}, {"points_dense", s.points_dense},
      {"vertices", res.mesh.vertex_count()}, {"faces", res.mesh.face_count()}, {"faces_before_decimation", faces_before},
      {"previews", s.previews},    {"first_preview_ms", s.first_preview_ms}, {"preview_ms_total", s.preview_ms_total},
      {"prompt_truncated", s.prompt_truncated}, {"negative_prompt_truncated", s.negative_prompt_truncated},
      {"unknown_words", s.unknown_words}, {"output", written.front().path},
      {"tokens_fnv1a", fnv1a(res.tokens)}};
  if (variations > 1) {
    j["variations"] = nlohmann::json::array();
    for (size_t v = 0; v < results.size(); ++v) {
      const auto& r = results[v];
      j["variations"].push_back({{"seed", cubeforge::variation_seed(seed, int(v))}, {"tokens_fnv1a", fnv1a(r.tokens)}, {"output", written[v].path},
                                 {"vertices", r.mesh.vertex_count()},
                                 {"faces", r.mesh.face_count()}, {"faces_before_decimation", written[v].faces_before},
                                 {"backend", r.stats.backend}, {"gpt_ms", r.stats.gpt_ms},
                                 {"latent_decode_ms", r.stats.latent_ms}, {"occupancy_ms", r.stats.occupancy_ms},
                                 {"meshing_ms", r.stats.meshing_ms}, {"cleanup_ms", r.stats.cleanup_ms},
                                 {"total_ms", r.stats.total_ms}});
    }
  }
  if (json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("tokens %zu | text %.1f ms | GPT %.1f ms (prefill %.1f, TPOT mean %.3f ms) | latent decode %.1f ms | "
                "occupancy %.1f ms (%zu of %zu points, %.1f%%) | meshing %.1f ms | clean-up %.1f ms | decimation %.1f ms | "
                "export %.1f ms | total %.1f ms\n",
                res.tokens.size(), s.text_ms, s.gpt_ms, s.prefill_ms, tpot_mean, s.latent_ms, s.occupancy_ms,
                s.points_evaluated, s.points_dense, s.points_dense ? 100.0 * double(s.points_evaluated) / double(s.points_dense) : 0.0,
                s.meshing_ms, s.cleanup_ms, decimate_ms, export_ms, s.total_ms + decimate_ms + export_ms);
    for (size_t v = 0; v < results.size() && !tokens_only; ++v)
      std::printf("mesh%s: %zu vertices, %zu faces%s%s\n",
                  variations > 1 ? (" v" + std::to_string(v) + " (seed " + std::to_string(cubeforge::variation_seed(seed, int(v))) + ")").c_str() : "",
                  results[v].mesh.vertex_count(), results[v].mesh.face_count(), written[v].path.empty() ? "" : " -> ",
                  written[v].path.c_str());
    if (variations > 1)
      std::printf("%d variations (%s): all done at %.1f ms\n", variations, results.back().stats.backend.c_str(),
                  results.back().stats.total_ms);
    if (s.previews) std::printf("previews: %d, first at %.1f ms, %.1f ms in all\n", s.previews, s.first_preview_ms, s.preview_ms_total);
  }
  if (s.prompt_truncated) std::fprintf(stderr, "warning: the prompt was longer than 77 CLIP tokens and was truncated\n");
  if (s.negative_prompt_truncated)
    std::fprintf(stderr, "warning: the negative prompt was longer than 77 CLIP tokens and was truncated\n");
  return 0;
}

}  // namespace

CUBEFORGE_COMMAND("generate", "prompt → shape tokens → mesh file", run);
