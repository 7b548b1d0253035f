// Adapter from Cube3D's TokenBackend interface to the CUDA GPT engine (cuda_gpt.h): weights come from the loaded
// CPU model (wte already rebuilt from the codebook), the cond rows from Cube3D's text stage; variations of one prompt decoded
// together as one batch of rows.
#include <chrono>

#include "cubeforge/cuda_backend.h"
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/error.h"
#include "gpt/dual_stream_gpt.h"
#include "gpt_weight_source.h"

namespace cubeforge {

namespace {

class CudaTokenBackend : public TokenBackend {
 public:
  CudaTokenBackend(std::unique_ptr<cuda::CudaGptEngine> e, std::string name, int max_rows)
      : engine_(std::move(e)), name_(std::move(name)), max_rows_(max_rows) {}
  std::string name() const override { return name_; }
  // With guidance every variation takes two rows (cond, uncond); the count must not depend on the request.
  int max_variations() const override { return max_rows_ / 2; }

  // One batch: rows [0, P) the prompt's cond row P times, [P, 2P) the unconditional row (without guidance P rows).
  // The engine's top-p draws variation p with seed + p, as a single generation of that seed.
  std::vector<std::vector<int>> generate_variations(const std::vector<float>& cond, int B, const GenerationRequest& req,
                                                    int count, const TokenCallback& on_token, const CancelToken* cancel,
                                                    GenerationStats* stats) override {
    throw_if_cancelled(cancel);
    if (count < 1 || count * B > max_rows_)
      throw Error("CUDA GPT: " + std::to_string(count) + " variations need " + std::to_string(count * B) +
                  " rows; this engine has " + std::to_string(max_rows_));
    const double prefill_ms = engine_->prefill(cuda::variation_rows(cond, B, count).data(), B * count, B == 2);
    cuda::GenerateOptions o;
    o.guidance = req.guidance;
    o.top_p = req.top_p;
    o.seed = req.seed;
    o.attention = req.attention == AttentionMode::Reference ? cuda::SingleBlockAttention::Reference
                                                            : cuda::SingleBlockAttention::Causal;
    o.cancel = cancel ? cancel->flag() : nullptr;
    std::vector<double> token_ms;
    o.on_token = [&](int index, int variation, int32_t token, double seconds) {
      const double ms = prefill_ms + seconds * 1000.0;
      if (variation == 0) token_ms.push_back(ms);
      if (on_token) on_token(TokenEvent{index, int(token), ms, variation});
    };
    cuda::GenerateStats gs;
    const auto ids = engine_->generate(o, &gs);
    if (stats) {
      stats->prefill_ms = prefill_ms;
      stats->token_ms = token_ms;
      stats->gpt_ms = prefill_ms + gs.wall_ms;
    }
    const int N = engine_->num_tokens();
    std::vector<std::vector<int>> out;
    for (int p = 0; p < count; ++p) out.emplace_back(ids.begin() + size_t(p) * N, ids.begin() + size_t(p + 1) * N);
    return out;
  }

 private:
  std::unique_ptr<cuda::CudaGptEngine> engine_;
  std::string name_;
  int max_rows_;
};

}  // namespace

std::unique_ptr<TokenBackend> make_cuda_token_backend(const Cube3D& model, std::string* why) {
  try {
    if (!cuda::cuda_available(why)) return nullptr;
    const DualStreamGpt& gpt = model.gpt();
    const cuda::GptWeightSource src = cuda_weight_source(gpt);
    cuda::EngineOptions eo;
    eo.verbose = false;
    // Rows for 4 variations with guidance (their KV caches: ~0.7 GB for v0.1, ~1.4 GB for v0.5); a GPU that cannot
    // hold them still gets single generations.
    std::unique_ptr<cuda::CudaGptEngine> engine;
    int rows = 2 * cuda::kGpuVariations;
    try {
      engine = cuda::CudaGptEngine::create(gpt.config(), gpt.num_tokens(), gpt.cond_len(), src, rows, eo);
    } catch (const std::exception&) {
      rows = 2;
      engine = cuda::CudaGptEngine::create(gpt.config(), gpt.num_tokens(), gpt.cond_len(), src, rows, eo);
    }
    const std::string name = "cuda (" + engine->device_name() + (engine->uses_generic_kernels() ? ", generic kernels)" : ")");
    return std::make_unique<CudaTokenBackend>(std::move(engine), name, rows);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace cubeforge
