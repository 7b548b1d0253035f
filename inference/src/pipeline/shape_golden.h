// Shape-stage part of the golden runner: latents, query_logits, grid_res4_logits, encoder_indices.
// Implemented next to the shape model; the runner calls it after the GPT checks.
#pragma once
#include <string>
#include <vector>

#include "cubeforge/golden.h"
#include "cubeforge/model_config.h"
#include "cubeforge/safetensors.h"

namespace cubeforge {

void add_golden_float(GoldenReport& r, const std::string& name, const std::vector<float>& out, const std::vector<float>& ref);
void add_golden_ids(GoldenReport& r, const std::string& name, const std::vector<int64_t>& out, const std::vector<int64_t>& ref);

// Appends the shape-stage lines for case NAME in DIR (shape checkpoint NAME_shape.safetensors).
void check_shape_golden(GoldenReport& r, const std::string& dir, const std::string& name, const ModelConfig& cfg,
                        const SafeTensors& io, const std::vector<int>& tokens);

}  // namespace cubeforge
