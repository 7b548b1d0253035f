// Internal: the loaded OneDAutoEncoder (shape tokenizer) weights, resolved into per-layer pointers, plus the tensors
// derived once at load (normalized codebook, Fourier carrier, folded occupancy head). Shared (read-only) by
// ShapeModel and every OccupancyDecoder built from it.
#pragma once
#include <string>
#include <vector>

#include "core/weights.h"
#include "cubeforge/model_config.h"
#include "shape/shape_kernels.h"

namespace cubeforge {

struct ShapeWeights {
  ShapeConfig cfg;
  std::string path;
  WeightStore store;
  int N = 0, W = 0, H = 0, hd = 0, E = 0, codes = 0, nf = 0, F = 0;  // F = Fourier embedding width
  float ln_eps = 1e-6f;

  // Fourier embedder (shared)
  const float* embed_w = nullptr;  // [3, nf]
  std::vector<float> carrier;      // [nf]

  // encoder
  const float* enc_query = nullptr;  // [N + cls, W]
  int enc_query_rows = 0;
  const float *enc_in_w = nullptr, *enc_in_b = nullptr, *enc_out_w = nullptr, *enc_out_b = nullptr;
  struct EncLayer {
    bool cross = false;
    shape::SelfAttnWeights self{};
    shape::CrossAttnWeights cross_w{};
  };
  std::vector<EncLayer> enc_layers;
  const float *enc_lnf_w = nullptr, *enc_lnf_b = nullptr;

  // bottleneck
  const float *c_in_w = nullptr, *c_in_b = nullptr, *c_out_w = nullptr, *c_out_b = nullptr, *vq_norm_w = nullptr;
  std::vector<float> codebook;       // normalized C [codes, E]
  std::vector<float> code_sqnorm;    // ‖C_c‖² [codes]
  std::vector<float> mean_code;      // mean over codes of C [E] (preview filler)

  // latent decoder
  const float* pos_enc = nullptr;  // [N, W]
  std::vector<shape::SelfAttnWeights> dec_layers;

  // occupancy decoder
  const float *q_in_w = nullptr, *q_in_b = nullptr, *q_out_w = nullptr, *q_out_b = nullptr;
  shape::CrossAttnWeights occ{};
  const float *occ_lnf_w = nullptr, *occ_lnf_b = nullptr, *head_w = nullptr, *head_b = nullptr;
};

}  // namespace cubeforge
