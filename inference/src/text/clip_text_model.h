// CLIP text tower (Hugging Face CLIPTextModel[WithProjection] layout), fp32 on the CPU: token + position
// embeddings, pre-LN transformer with causal + key-padding mask, quick_gelu MLP, final LayerNorm.
// Produces last_hidden_state (all 77 positions are Cube's conditioning) and, when the projection is present,
// the pooled + projected embedding (first EOS position), used only to check the projection path.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/weights.h"
#include "cubeforge/model_config.h"

namespace cubeforge {

class ClipTextModel {
 public:
  // Accepts a text-tower-only file or a full CLIPModel file (vision_* tensors are ignored).
  static std::unique_ptr<ClipTextModel> load(const TextConfig& cfg, const std::string& safetensors_path);
  // Text-tower tensor names and shapes for cfg (with_projection adds text_projection.weight).
  static TensorSpec tensor_spec(const TextConfig& cfg, bool with_projection);

  const TextConfig& config() const { return cfg_; }
  int hidden() const { return cfg_.hidden_size; }
  bool has_projection() const { return has_projection_; }
  const WeightStore& weights() const { return w_; }  // fp32, Hugging Face names (GPU text encoders copy them)

  // ids, mask: [B, T] (T ≤ max_position_embeddings). last_hidden: [B, T, H]. text_embeds: [B, P] or nullptr.
  void forward(const int64_t* ids, const int64_t* mask, int B, int T, float* last_hidden, float* text_embeds) const;

 private:
  TextConfig cfg_;
  WeightStore w_;
  bool has_projection_ = false;
};

}  // namespace cubeforge
