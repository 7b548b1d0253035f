// `cubeforge-gen shape-pipeline-check --tokenizer DIR`: the GPU shape stage wired into Cube3D (ShapeBackend), on a
// random-weight test model written to a temporary directory: tokens → mesh through Cube3D on the CPU and on the GPU
// (vertex counts, Chamfer, times), prompt → mesh with live previews on the GPU stage, and the fall-back message for a
// model the engine cannot take (head_dim != 64). CUDA builds with the full pipeline (the CMake build).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "command.h"
#ifdef CUBEFORGE_HAVE_CUDA
#include "cubeforge/cube3d.h"
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
      std::vector<int> generate(const std::vector<float>&, int, const GenerationRequest&, const TokenCallback&,
                                const CancelToken*, GenerationStats*) override {
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

int run_cmd(int argc, char** argv) {
  std::string tokenizer;
  int rb = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--tokenizer" && i + 1 < argc) tokenizer = argv[++i];
    else if (k == "--rb" && i + 1 < argc) rb = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: cubeforge-gen shape-pipeline-check --tokenizer DIR [--rb N]\n");
      return 2;
    }
  }
  if (tokenizer.empty()) {
    std::fprintf(stderr, "shape-pipeline-check: --tokenizer DIR (vocab.json, merges.txt) is required\n");
    return 2;
  }
  try {
    for (const char* p : {"small", "mid"}) check_preset(p, tokenizer, rb);
    // A model the engine cannot take: the factory says why and Cube3D stays on the CPU.
    fs::path dir;
    auto tiny = load_preset("tiny", tokenizer, dir);
    std::string why;
    auto b = make_cuda_shape_backend(*tiny, &why);
    verdict("tiny model (head_dim 16): no GPU backend, reason given", !b && !why.empty(), why);
    fs::remove_all(dir);
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
