// Adapter from Cube3D's TextBackend interface to the CUDA text encoder (cuda_text.h): the weights are copied from
// the loaded CPU text tower (already fp32, names and shapes checked at load), so nothing is read from disk again.
#include <memory>
#include <string>
#include <vector>

#include "cubeforge/cube3d.h"
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/cuda_text.h"
#include "cubeforge/error.h"
#include "text/clip_text_model.h"

namespace cubeforge {
namespace {

class CudaTextBackend final : public TextBackend {
 public:
  CudaTextBackend(std::unique_ptr<cuda::CudaClipEngine> engine, int hidden)
      : engine_(std::move(engine)), hidden_(hidden), name_("cuda (" + engine_->device_name() + ", fp32)") {}
  std::string name() const override { return name_; }
  void encode(const std::vector<int64_t>& ids, const std::vector<int64_t>& mask, int B,
              std::vector<float>& last_hidden) override {
    const int T = 77;
    last_hidden.assign(size_t(B) * T * hidden_, 0.0f);
    engine_->encode(ids.data(), mask.data(), B, T, last_hidden.data());
  }

 private:
  std::unique_ptr<cuda::CudaClipEngine> engine_;
  int hidden_;
  std::string name_;
};

cuda::ClipWeightSource cuda_clip_weight_source(const ClipTextModel& clip) {
  cuda::ClipWeightSource src;
  src.get = [&clip, spec = ClipTextModel::tensor_spec(clip.config(), false)](const std::string& name,
                                                                            const std::vector<int64_t>& shape) {
    auto it = spec.find(name);
    if (it == spec.end() || it->second != shape)
      throw Error("CUDA text encoder: tensor '" + name + "' unknown or of another shape");
    const float* p = clip.weights().get(name);
    size_t n = 1;
    for (auto d : shape) n *= size_t(d);
    return std::vector<float>(p, p + n);
  };
  return src;
}

}  // namespace

std::unique_ptr<TextBackend> make_cuda_text_backend(const Cube3D& model, std::string* why) {
  try {
    if (!cuda::cuda_available(why)) return nullptr;
    const ClipTextModel& clip = model.clip_model();
    // 2 rows: a prompt and the empty prompt (Cube3D caches the latter, so generations pass one).
    auto engine = cuda::CudaClipEngine::create(clip.config(), cuda_clip_weight_source(clip), 2);
    return std::make_unique<CudaTextBackend>(std::move(engine), clip.hidden());
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace cubeforge
