// CudaClipEngine: the CLIP text tower (Hugging Face CLIPTextModel layout, text_model.*) in fp32 on the GPU, so a
// CUDA generation does not wait on the CPU for its conditioning. Same computation as the CPU ClipTextModel (token +
// position embeddings, pre-LN blocks with causal + key-padding attention, quick_gelu or erf-GELU MLP, final LayerNorm):
// fp32 weights and activations, cuBLAS SGEMM without TF32, so it differs from the CPU path by summation order only.
// Plain C++ header: compiles without CUDA; defined only in CUDA builds (cubeforge_cuda, CUBEFORGE_HAVE_CUDA=1).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cubeforge/model_config.h"

namespace cubeforge::cuda {

// Every text-tower tensor by its Hugging Face name and shape, as fp32 (the engine copies and forgets it).
struct ClipWeightSource {
  std::function<std::vector<float>(const std::string& name, const std::vector<int64_t>& shape)> get;
};

class CudaClipEngine {
 public:
  // Throws cubeforge::Error (no GPU, GPU too small, missing tensor). max_rows: prompts per encode() call.
  static std::unique_ptr<CudaClipEngine> create(const TextConfig& cfg, const ClipWeightSource& weights, int max_rows = 2);
  virtual ~CudaClipEngine() = default;

  // ids, mask: [B][T] (B ≤ max_rows, T ≤ max_position_embeddings; masks are ones then zeros) → last_hidden [B][T][H].
  // Same checks and messages as the CPU path (ids outside the vocabulary, a mask that is not a prefix).
  // device_ms (optional): the GPU time of the forward pass (CUDA events), without the host copies.
  virtual void encode(const int64_t* ids, const int64_t* mask, int B, int T, float* last_hidden,
                      double* device_ms = nullptr) = 0;
  virtual size_t vram_bytes() const = 0;
  virtual std::string device_name() const = 0;
};

}  // namespace cubeforge::cuda
