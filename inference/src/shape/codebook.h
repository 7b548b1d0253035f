// The normalized VQ codebook C (spec §2.3 / §8.1): RMSNorm₁ₑ₋₅(codebook ⊙ cb_weight + cb_bias) ⊙ norm.weight.
// Shared by the GPT (rebuilds wte rows from it), the latent decoder (lookup) and the encoder (nearest code).
#pragma once
#include <vector>

#include "cubeforge/model_config.h"
#include "cubeforge/safetensors.h"

namespace cubeforge {

// [num_codes, embed_dim] fp32, read from a shape tokenizer checkpoint (shapes checked against cfg).
std::vector<float> normalized_codebook(const SafeTensors& shape_file, const ShapeConfig& cfg);
// Same from raw tensors already in memory.
std::vector<float> normalized_codebook(const float* codebook, const float* cb_weight, const float* cb_bias,
                                       const float* norm_weight, int num_codes, int embed_dim);

}  // namespace cubeforge
