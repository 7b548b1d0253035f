// `cubeforge-gen shape-pipeline-check --tokenizer DIR`: the GPU shape stage wired into Cube3D (ShapeBackend), on a
// random-weight test model written to a temporary directory: tokens → mesh through Cube3D on the CPU and on the GPU
// (vertex counts, Chamfer, times), prompt → mesh with live previews on the GPU stage, the tiny preset (width 64,
// head_dim 16) taken by the engine, and the fall-back message for a configuration it cannot take (head_dim 24).
// `--model DIR`: a real model instead (e.g. assets/default-model): its reference_tokens.json cases (or fixed ids)
// through tokens → mesh on the CPU and on the GPU shape stage: vertex counts, Chamfer, times (warm-up, then 2 runs).
// CUDA builds with the full pipeline (the CMake build).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "command.h"
#ifdef CUBEFORGE_HAVE_CUDA
#include <fstream>
#include <nlohmann/json.hpp>

#include "cubeforge/cube3d.h"
#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "cubeforge/mesh_metrics.h"
#include "cubeforge/test_model.h"
#endif

namespace {

#ifdef CUBEFORGE_HAVE_CUDA
using namespace cubeforge;
namespace fs = std::filesystem;

int failures = 0;
void verdict(const std::string& what, bool ok, const std::string& detail) {
  std::printf("  %-52s %s  %s\n", what.c_str(), ok ? "ok  " : "FAIL", detail.c_str());
  if (!ok) ++failures;
}

std::unique_ptr<Cube3D> load_preset(const std::string& preset, const std::string& tokenizer, fs::path& dir) {
  dir = fs::temp_directory_path() / ("cf_pipeline_" + preset);
  fs::remove_all(dir);
  write_random_model(dir.string(), test_model_preset(preset), tokenizer, 7);
  return Cube3D::load(ModelFiles::from_directory(dir.string()));
}

void check_preset(const std::string& preset, const std::string& tokenizer, int rb) {
  std::printf("== %s test model (random weights), rb %d\n", preset.c_str(), rb);
  fs::path dir;
  auto model = load_preset(preset, tokenizer, dir);
  const int N = model->config().num_tokens(), codes = model->config().shape.num_codes;
  std::vector<int> ids(N);
  for (int i = 0; i < N; ++i) ids[i] = int((uint64_t(i) * 2654435761u + 17) % uint64_t(codes));
  MeshOptions mo;
  mo.resolution_base = rb;
  GenerationStats cs, gs;
  const Mesh cpu = model->tokens_to_mesh(ids, mo, nullptr, &cs);
  std::string why;
  auto backend = make_cuda_shape_backend(*model, &why);
  verdict("GPU shape backend from the model's tensors", backend != nullptr, backend ? backend->name() : why);
  if (!backend) return;
  {  // the front ends' switch: attaching a CUDA token loop attaches the GPU shape stage (registered factory)
    struct StubCudaTokens : TokenBackend {
      std::string name() const override { return "cuda (stub token loop)"; }
      std::vector<std::vector<int>> generate_variations(const std::vector<float>&, int, const GenerationRequest&, int,
                                                        const TokenCallback&, const CancelToken*,
                                                        GenerationStats*) override {
        throw Error("stub");
      }
    };
    model->set_token_backend(std::make_unique<StubCudaTokens>());
    const std::string attached = model->shape_backend_name();
    model->set_token_backend(nullptr);
    verdict("set_token_backend(cuda) attaches the GPU shape stage", attached.rfind("cuda", 0) == 0 &&
            model->shape_backend_name() == "cpu", attached + ", then " + model->shape_backend_name());
  }
  model->set_shape_backend(std::move(backend));
  model->tokens_to_mesh(ids, mo, nullptr, &gs);  // warm-up (GEMM plans)
  const Mesh gpu = model->tokens_to_mesh(ids, mo, nullptr, &gs);
  const ChamferResult ch = chamfer_distance(cpu, gpu, 50000);
  verdict("Cube3D::tokens_to_mesh ran on the GPU", gs.shape_backend.rfind("cuda", 0) == 0, gs.shape_backend);
  verdict("GPU vs CPU mesh (bf16 vs fp32 network)", !gpu.empty() && ch.chamfer < 0.01,
          "verts " + std::to_string(gpu.vertex_count()) + " vs " + std::to_string(cpu.vertex_count()) + ", Chamfer " +
              std::to_string(ch.chamfer) + ", points " + std::to_string(gs.points_evaluated) + " vs " +
              std::to_string(cs.points_evaluated));
  std::printf("  times ms (latent / occupancy / meshing / cleanup): CPU %.1f / %.1f / %.1f / %.1f, GPU %.2f / %.2f / "
              "%.2f / %.1f\n",
              cs.latent_ms, cs.occupancy_ms, cs.meshing_ms, cs.cleanup_ms, gs.latent_ms, gs.occupancy_ms, gs.meshing_ms,
              gs.cleanup_ms);
  const std::vector<int> prefix(ids.begin(), ids.begin() + N / 3);
  const Mesh pg = model->preview_mesh(prefix, 5);
  model->set_shape_backend(nullptr);
  const Mesh pc = model->preview_mesh(prefix, 5);
  verdict("preview (first N/3 tokens, rb 5) GPU vs CPU", !pg.empty() && chamfer_distance(pc, pg, 20000).chamfer < 0.02,
          "verts " + std::to_string(pg.vertex_count()) + " vs " + std::to_string(pc.vertex_count()));
  model->set_shape_backend(make_cuda_shape_backend(*model, &why));
  GenerationRequest req;
  req.prompt = "a wooden chair";
  PreviewOptions po;
  po.every = 16;
  int previews = 0;
  const auto t0 = std::chrono::steady_clock::now();
  ShapeResult r = model->generate(req, mo, {}, [&](int, const Mesh&) { ++previews; }, po);
  const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  verdict("prompt -> mesh (CPU text + GPT, GPU shape stage)", r.stats.shape_backend.rfind("cuda", 0) == 0,
          r.stats.shape_backend + ", " + std::to_string(previews) + " previews (" +
              std::to_string(r.stats.preview_ms_total) + " ms), gpt " + std::to_string(r.stats.gpt_ms) +
              " ms, shape " + std::to_string(r.stats.latent_ms + r.stats.occupancy_ms + r.stats.meshing_ms) +
              " ms, total " + std::to_string(wall) + " ms, faces " + std::to_string(r.mesh.face_count()));
  model.reset();
  fs::remove_all(dir);
}

// A configuration the engine cannot take (head_dim 24): create() refuses with the reason, which the factory passes on
// (Cube3D then stays on the CPU).
void refusal_check() {
  ShapeConfig c;
  c.width = 48;
  c.num_heads = 2;
  cuda::ShapeWeightSource src{[](const std::string&, const std::vector<int64_t>&) -> std::vector<float> {
    throw Error("no weights needed");
  }};
  std::string msg;
  try {
    cuda::CudaShapeEngine::create(c, src);
  } catch (const std::exception& e) {
    msg = e.what();
  }
  verdict("head_dim 24 refused with a reason", msg.find("head_dim must be") != std::string::npos, msg);
}

// A real model's shape stage: CPU vs GPU tokens → mesh on its reference token sequences.
void check_model(const std::string& dir, int rb) {
  auto model = Cube3D::load(ModelFiles::from_directory(dir));
  const ShapeConfig& sc = model->config().shape;
  std::printf("== model %s: shape width %d, %d heads (head_dim %d), num_freqs %d, %d latents, %d decoder layers; rb %d, "
              "default MeshOptions (adaptive)\n",
              dir.c_str(), sc.width, sc.num_heads, sc.width / sc.num_heads, sc.num_freqs, sc.num_encoder_latents,
              sc.num_decoder_layers, rb);
  std::vector<std::pair<std::string, std::vector<int>>> cases;
  const fs::path ref = fs::path(dir) / "reference_tokens.json";
  if (fs::exists(ref)) {
    std::ifstream f(ref);
    const auto j = nlohmann::json::parse(f);
    for (const auto& c : j.at("cases")) cases.emplace_back(c.at("prompt").get<std::string>(), c.at("tokens").get<std::vector<int>>());
  } else {
    std::vector<int> ids(size_t(model->config().num_tokens()));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int((uint64_t(i) * 2654435761u + 17) % uint64_t(sc.num_codes));
    cases.emplace_back("fixed ids", ids);
  }
  std::string why;
  auto backend = make_cuda_shape_backend(*model, &why);
  verdict("GPU shape backend for this model", backend != nullptr, backend ? backend->name() : why);
  if (!backend) return;
  MeshOptions mo;
  mo.resolution_base = rb;
  for (const auto& [prompt, ids] : cases) {
    model->set_shape_backend(nullptr);
    GenerationStats cs, gs;
    auto t0 = std::chrono::steady_clock::now();
    const Mesh cpu = model->tokens_to_mesh(ids, mo, nullptr, &cs);
    const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    model->set_shape_backend(make_cuda_shape_backend(*model, &why));
    model->tokens_to_mesh(ids, mo, nullptr, &gs);  // warm-up (GEMM plans, first allocations)
    double gpu_ms[2];
    Mesh gpu;
    for (double& ms : gpu_ms) {
      t0 = std::chrono::steady_clock::now();
      gpu = model->tokens_to_mesh(ids, mo, nullptr, &gs);
      ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    const ChamferResult ch = chamfer_distance(cpu, gpu, 50000);
    verdict("'" + prompt + "': GPU vs CPU mesh", gs.shape_backend.rfind("cuda", 0) == 0 && !gpu.empty() &&
                                                    ch.chamfer < 0.01,
            "verts " + std::to_string(gpu.vertex_count()) + " vs " + std::to_string(cpu.vertex_count()) + ", faces " +
                std::to_string(gpu.face_count()) + " vs " + std::to_string(cpu.face_count()) + ", Chamfer " +
                std::to_string(ch.chamfer) + ", Hausdorff " + std::to_string(ch.hausdorff) + ", points " +
                std::to_string(gs.points_evaluated) + " vs " + std::to_string(cs.points_evaluated));
    std::printf("    tokens -> mesh ms: CPU %.1f (latent %.1f / occupancy %.1f / meshing %.1f / cleanup %.1f); GPU %.2f, "
                "%.2f (latent %.2f / occupancy %.2f / meshing %.2f / cleanup %.2f)\n",
                cpu_ms, cs.latent_ms, cs.occupancy_ms, cs.meshing_ms, cs.cleanup_ms, gpu_ms[0], gpu_ms[1], gs.latent_ms,
                gs.occupancy_ms, gs.meshing_ms, gs.cleanup_ms);
  }
}

int run_cmd(int argc, char** argv) {
  std::string tokenizer, model_dir;
  int rb = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--tokenizer" && i + 1 < argc) tokenizer = argv[++i];
    else if (k == "--model" && i + 1 < argc) model_dir = argv[++i];
    else if (k == "--rb" && i + 1 < argc) rb = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: cubeforge-gen shape-pipeline-check (--tokenizer DIR | --model DIR) [--rb N]\n");
      return 2;
    }
  }
  if (!model_dir.empty()) {
    try {
      check_model(model_dir, rb);
    } catch (const std::exception& e) {
      std::printf("  aborted: %s\n", e.what());
      ++failures;
    }
    std::printf("shape-pipeline-check: %d failure(s)\n", failures);
    return failures ? 1 : 0;
  }
  if (tokenizer.empty()) {
    std::fprintf(stderr, "shape-pipeline-check: --tokenizer DIR (vocab.json, merges.txt) is required\n");
    return 2;
  }
  try {
    for (const char* p : {"small", "mid"}) check_preset(p, tokenizer, rb);
    // head_dim 16 (width 64, 4 heads): taken by the engine's templated kernels.
    fs::path dir;
    auto tiny = load_preset("tiny", tokenizer, dir);
    std::string why;
    auto b = make_cuda_shape_backend(*tiny, &why);
    verdict("tiny model (width 64, head_dim 16): GPU backend", b != nullptr, b ? b->name() : why);
    fs::remove_all(dir);
    refusal_check();
  } catch (const std::exception& e) {
    std::printf("  aborted: %s\n", e.what());
    ++failures;
  }
  std::printf("shape-pipeline-check: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
#else
int run_cmd(int, char**) {
  std::fprintf(stderr, "shape-pipeline-check: this build has no CUDA backend\n");
  return 1;
}
#endif

}  // namespace

CUBEFORGE_COMMAND("shape-pipeline-check", "CUDA builds: Cube3D's GPU shape stage vs the CPU path on test models",
                  run_cmd);
