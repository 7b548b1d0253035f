// Random-weight models in the reference directory layout (config.yaml, shape_gpt.safetensors,
// shape_tokenizer.safetensors, clip/ with the real CLIP vocabulary), for tests, benchmarks and the editor's
// end-to-end tests before a trained model is available. Weights are seeded and never zero:
// matrices ~ N(0, 1/fan_in), embeddings ~ N(0, 1), norm weights 1 + 0.1·N(0,1), biases 0.1·N(0,1).
#pragma once
#include <cstdint>
#include <string>

#include "cubeforge/model_config.h"
#include "cubeforge/safetensors_writer.h"

namespace cubeforge {

// "tiny" (v0.5 layout with bbox, D 64, 32 tokens: milliseconds per token), "small" (D 256, 4+1 blocks,
// 128 tokens, shape width 256 / 128 latents), "mid" (D 512, 8+1 blocks, 256 tokens),
// "v0.1" / "v0.5" (the real sizes). CLIP: a small tower with the full 49 408-token vocabulary.
ModelConfig test_model_preset(const std::string& name);

// Writes the model into dir (created if needed). tokenizer_dir holds vocab.json and merges.txt.
void write_random_model(const std::string& dir, const ModelConfig& cfg, const std::string& tokenizer_dir, uint64_t seed,
                        StorageType storage = StorageType::F32);

// Writes a reference-style YAML config (gpt_model / shape_model sections, plus text_model when cfg.has_text).
std::string model_config_yaml(const ModelConfig& cfg);

}  // namespace cubeforge
