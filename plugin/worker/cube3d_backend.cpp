// Cube3D-backed ModelBackend: resolves the model directory, loads it with progress (cancellable between stages),
// exposes the tokenizer + known-word list to the UI for live prompt checks, and runs a job's variations through
// Cube3D::generate_variations (one GPU batch where the token backend decodes several together).
#include "worker/cube3d_backend.h"

#include <cubeforge/clip_tokenizer.h>
#include <cubeforge/cuda_backend.h>
#include <cubeforge/error.h>

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace cubeforge::ai {

PromptCheck check_prompt(const ModelInfo* info, const std::string& prompt) {
  PromptCheck pc;
  pc.empty = std::all_of(prompt.begin(), prompt.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  if (pc.empty || !info || !info->tokenizer) return pc;
  auto enc = info->tokenizer->encode(prompt);
  pc.tokens = int(enc.bpe_ids.size());
  pc.truncated = enc.truncated;
  if (!info->known_set.empty()) pc.unknown_words = unknown_words(*info->tokenizer, prompt, info->known_set);
  return pc;
}

namespace {

class Cube3DModel : public LoadedModel {
 public:
  Cube3DModel(std::unique_ptr<Cube3D> m, std::shared_ptr<const ModelInfo> info) : m_(std::move(m)), info_(std::move(info)) {}
  std::shared_ptr<const ModelInfo> info() const override { return info_; }
  std::vector<ShapeResult> generate(const JobSpec& spec, const TokenCallback& on_token, const PreviewCallback& on_preview,
                                    const CancelToken* cancel, const StageCallback& on_stage) override {
    if (spec.request.variations > 1)
      return m_->generate_variations(spec.request, spec.mesh, on_token, on_preview, spec.preview, cancel, on_stage);
    std::vector<ShapeResult> one;
    one.push_back(m_->generate(spec.request, spec.mesh, on_token, on_preview, spec.preview, cancel, on_stage));
    return one;
  }

 private:
  std::unique_ptr<Cube3D> m_;
  std::shared_ptr<const ModelInfo> info_;
};

class Cube3DBackend : public ModelBackend {
 public:
  std::unique_ptr<LoadedModel> load(const std::string& dir, const LoadProgress& progress, const CancelToken* cancel) override {
    if (dir.empty()) throw Error("no model directory set (choose the default model or a directory)");
    if (std::string why = check_model_dir(dir); !why.empty()) throw Error(why);
    ModelFiles files;
    try {
      files = ModelFiles::from_directory(dir);
    } catch (const Error& e) {
      throw Error(std::string("bad model directory: ") + e.what());
    }
    auto report = [&](float f, const std::string& stage) {
      throw_if_cancelled(cancel);
      if (progress) progress(f, stage);
    };
    std::unique_ptr<Cube3D> model;
    try {
      model = Cube3D::load(files, report);
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      throw Error("cannot load the model in '" + dir + "': " + e.what());
    }
    throw_if_cancelled(cancel);
    auto info = std::make_shared<ModelInfo>();
    info->dir = dir;
    info->name = fs::path(dir).filename().string();
    if (info->name.empty()) info->name = fs::path(dir).parent_path().filename().string();
    // The best token-loop backend the build and the machine offer ($CUBEFORGE_BACKEND: auto, cpu, cuda). A GPU that
    // fails mid-generation (e.g. out of memory) falls back to the CPU inside the library; the job's stats say so.
    const char* pref = std::getenv("CUBEFORGE_BACKEND");
    std::string line;
    try {
      line = enable_best_backend(*model, pref && *pref ? pref : "auto");
    } catch (const std::exception& e) {
      line = std::string("cpu (") + e.what() + ")";
    }
    if (line.rfind("cpu", 0) == 0) {
      info->backend = "CPU (fp32, " + std::to_string(omp_get_max_threads()) + " threads)";
      const auto open = line.find('(');
      if (open != std::string::npos && line.size() > open + 1) info->backend_note = line.substr(open + 1, line.size() - open - 2);
    } else {
      info->backend = line;
      // The GPU's one-time costs (~0.25 s: libraries, kernel loading, graph capture) are paid here, in the
      // background load, instead of by the user's first prompt. A failure here is not fatal: generation falls back.
      report(0.99f, "warming up the GPU");
      try {
        model->warm_up(cancel);
      } catch (const Cancelled&) {
        throw;
      } catch (const std::exception& e) {
        info->backend_note = std::string("warm-up failed: ") + e.what();
      }
    }
    info->num_tokens = model->config().num_tokens();
    info->use_bbox = model->config().gpt.use_bbox;
    info->known_set = model->known_words();
    info->known_words.assign(info->known_set.begin(), info->known_set.end());
    std::sort(info->known_words.begin(), info->known_words.end());
    if (model->has_tokenizer()) {
      const std::string vocab = !files.vocab.empty() ? files.vocab : (fs::path(files.clip_dir) / "vocab.json").string();
      const std::string merges = !files.merges.empty() ? files.merges : (fs::path(files.clip_dir) / "merges.txt").string();
      try {
        info->tokenizer = std::make_shared<ClipTokenizer>(ClipTokenizer::load(vocab, merges));
      } catch (const std::exception&) {
        // The model itself loaded its tokenizer; the UI-side copy is only for live hints.
      }
    }
    return std::make_unique<Cube3DModel>(std::move(model), std::move(info));
  }
};

}  // namespace

std::shared_ptr<ModelBackend> make_cube3d_backend() { return std::make_shared<Cube3DBackend>(); }

std::string default_model_dir() {
  if (const char* env = std::getenv("CUBEFORGE_MODEL_DIR"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path cand = exe.parent_path() / ".." / ".." / "assets" / "default-model";
    if (fs::is_directory(cand, ec)) return fs::weakly_canonical(cand, ec).string();
    // Installed layout: <prefix>/bin/cubeforge + <prefix>/share/cubeforge/default-model.
    fs::path share = exe.parent_path() / ".." / "share" / "cubeforge" / "default-model";
    if (fs::is_directory(share, ec)) return fs::weakly_canonical(share, ec).string();
    return fs::weakly_canonical(cand, ec).string();
  }
  return "assets/default-model";
}

std::string check_model_dir(const std::string& dir) {
  std::error_code ec;
  if (dir.empty()) return "no model directory set";
  if (!fs::is_directory(dir, ec)) return "model directory '" + dir + "' does not exist";
  std::vector<std::string> missing;
  bool has_config = false;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    const auto ext = e.path().extension().string();
    const auto name = e.path().filename().string();
    if (name == "config.yaml" || name == "config.json" || ext == ".yaml" || ext == ".yml") has_config = true;
  }
  if (!has_config) missing.push_back("config.yaml");
  for (const char* f : {"shape_gpt.safetensors", "shape_tokenizer.safetensors"})
    if (!fs::is_regular_file(fs::path(dir) / f, ec)) missing.push_back(f);
  const fs::path clip = fs::path(dir) / "clip";
  if (!fs::is_directory(clip, ec)) {
    missing.push_back("clip/");
  } else {
    for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
      if (!fs::is_regular_file(clip / f, ec)) missing.push_back(std::string("clip/") + f);
  }
  if (missing.empty()) return {};
  std::string list;
  for (auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  return "model directory '" + dir + "' is missing " + list;
}

}  // namespace cubeforge::ai
