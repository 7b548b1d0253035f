// Adapter from Cube3D's ShapeBackend interface to the CUDA shape engine (cuda_shape.h): the decoder-side weights are
// read again from the loaded model's shape tokenizer file (fp32 conversion of F32/F16/BF16 storage, the shared
// Fourier embedder under any of its three names), tokens → mesh and previews run on the engine's own stream.
#include <memory>
#include <string>
#include <vector>

#include "cubeforge/cube3d.h"
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "cubeforge/safetensors.h"

namespace cubeforge {
namespace {

// grid.h's rule (same fields, same defaults) for the engine; marching cubes runs on the device grid.
cuda::GpuGridOptions gpu_grid_options(const AdaptiveOptions& ao, bool adaptive, const CancelToken* cancel) {
  cuda::GpuGridOptions go;
  go.adaptive = adaptive;
  go.coarse_rb = ao.coarse_rb;
  go.margin = ao.margin;
  go.dilation = ao.dilation;
  go.scale_margin = ao.scale_margin;
  go.final_dilation = ao.final_dilation;
  go.copy_values = false;
  go.cancel = cancel ? cancel->flag() : nullptr;
  return go;
}

class CudaShapeBackend final : public ShapeBackend {
 public:
  CudaShapeBackend(std::unique_ptr<cuda::CudaShapeEngine> engine, std::string name)
      : engine_(std::move(engine)), name_(std::move(name)) {}
  std::string name() const override { return name_; }

  Mesh tokens_to_mesh(const std::vector<int>& tokens, const MeshOptions& opt, const CancelToken* cancel,
                      GenerationStats* stats) override {
    const auto go = gpu_grid_options(adaptive_options(opt), opt.mode == OccupancyMode::Adaptive, cancel);
    cuda::ShapeStageTimes t;
    Mesh mesh = engine_->tokens_to_mesh(tokens, opt.resolution_base, go, {}, &t);
    if (stats) {
      stats->latent_ms = t.latent_ms;
      stats->occupancy_ms = t.grid_ms;
      stats->meshing_ms = t.mc_ms;
      stats->points_evaluated = t.points;
      stats->points_dense = t.grid_points;
    }
    return mesh;
  }

  Mesh preview_mesh(const std::vector<int>& prefix, int rb, const AdaptiveOptions& ao,
                    const CancelToken* cancel) override {
    throw_if_cancelled(cancel);
    engine_->decode_preview(prefix);
    engine_->grid(rb, gpu_grid_options(ao, rb > ao.coarse_rb, cancel));
    return engine_->marching_cubes();
  }

 private:
  std::unique_ptr<cuda::CudaShapeEngine> engine_;
  std::string name_;
};

}  // namespace

std::unique_ptr<ShapeBackend> make_cuda_shape_backend(const Cube3D& model, std::string* why) {
  try {
    if (!cuda::cuda_available(why)) return nullptr;
    const SafeTensors file = SafeTensors::open(model.files().shape);
    cuda::ShapeWeightSource src;
    src.get = [&file](const std::string& name, const std::vector<int64_t>& shape) {
      if (name == "embedder.weight")  // stored once under one of its module names (ShapeModel::load does the same)
        for (const char* n : {"embedder.weight", "encoder.embedder.weight", "occupancy_decoder.embedder.weight"})
          if (file.contains(n)) return file.to_f32(n, shape);
      return file.to_f32(name, shape);
    };
    cuda::ShapeEngineOptions eo;
    eo.verbose = false;
    auto engine = cuda::CudaShapeEngine::create(model.config().shape, src, eo);
    const std::string name = "cuda (" + engine->device_name() + ")";
    return std::make_unique<CudaShapeBackend>(std::move(engine), name);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace cubeforge
