// Adapter from Cube3D's TokenBackend interface to the CUDA GPT engine (cuda_gpt.h): weights come from the loaded
// CPU model (wte already rebuilt from the codebook), the cond rows from Cube3D's text stage.
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
  CudaTokenBackend(std::unique_ptr<cuda::CudaGptEngine> e, std::string name) : engine_(std::move(e)), name_(std::move(name)) {}
  std::string name() const override { return name_; }

  std::vector<int> generate(const std::vector<float>& cond, int B, const GenerationRequest& req, const TokenCallback& on_token,
                            const CancelToken* cancel, GenerationStats* stats) override {
    throw_if_cancelled(cancel);
    const bool cfg = B == 2;
    const double prefill_ms = engine_->prefill(cond.data(), B, cfg);
    cuda::GenerateOptions o;
    o.guidance = req.guidance;
    o.top_p = req.top_p;
    o.seed = req.seed;
    o.attention = req.attention == AttentionMode::Reference ? cuda::SingleBlockAttention::Reference
                                                            : cuda::SingleBlockAttention::Causal;
    o.cancel = cancel ? cancel->flag() : nullptr;
    std::vector<double> token_ms;
    o.on_token = [&](int index, int variation, int32_t token, double seconds) {
      if (variation != 0) return;
      token_ms.push_back(prefill_ms + seconds * 1000.0);
      if (on_token) on_token(TokenEvent{index, int(token), token_ms.back()});
    };
    cuda::GenerateStats gs;
    auto ids = engine_->generate(o, &gs);
    if (stats) {
      stats->prefill_ms = prefill_ms;
      stats->token_ms = token_ms;
      stats->gpt_ms = prefill_ms + gs.wall_ms;
    }
    return std::vector<int>(ids.begin(), ids.begin() + engine_->num_tokens());
  }

 private:
  std::unique_ptr<cuda::CudaGptEngine> engine_;
  std::string name_;
};

}  // namespace

std::unique_ptr<TokenBackend> make_cuda_token_backend(const Cube3D& model, std::string* why) {
  try {
    if (!cuda::cuda_available(why)) return nullptr;
    const DualStreamGpt& gpt = model.gpt();
    const cuda::GptWeightSource src = cuda_weight_source(gpt);
    cuda::EngineOptions eo;
    eo.verbose = false;
    auto engine = cuda::CudaGptEngine::create(gpt.config(), gpt.num_tokens(), gpt.cond_len(), src, 2, eo);
    const std::string name = "cuda (" + engine->device_name() + (engine->uses_generic_kernels() ? ", generic kernels)" : ")");
    return std::make_unique<CudaTokenBackend>(std::move(engine), name);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace cubeforge
