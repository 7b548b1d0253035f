// Model configuration: the reference YAML keys (gpt_model / shape_model, spec §1) and the golden JSON configs
// (plus a text_model section in Hugging Face CLIPTextConfig keys). Loaded and validated with clear messages.
#pragma once
#include <string>
#include <vector>

namespace cubeforge {

struct GptConfig {
  int n_layer = 23;             // dual-stream blocks; the last one is cond_pre_only
  int n_single_layer = 1;
  double rope_theta = 10000.0;
  int n_head = 12;
  int n_embd = 1536;
  bool bias = true;
  float eps = 1e-6f;            // LayerNorm eps (RMSNorms use 1e-5)
  int shape_model_vocab_size = 16384;
  int text_model_embed_dim = 768;
  bool use_pooled_text_embed = false;
  int shape_model_embed_dim = 32;
  bool encoder_with_cls_token = true;
  bool use_bbox = false;

  int head_dim() const { return n_embd / n_head; }
  int vocab() const { return shape_model_vocab_size + 3; }
  int bos_id() const { return shape_model_vocab_size; }
  int eos_id() const { return shape_model_vocab_size + 1; }
  int pad_id() const { return shape_model_vocab_size + 2; }
  int mlp_hidden() const { return 4 * n_embd; }
};

struct ShapeConfig {
  bool encoder_with_cls_token = true;
  int num_encoder_latents = 512;  // N: also the number of generated tokens
  int num_decoder_latents = 0;
  int embed_dim = 32;
  int width = 768;
  int num_heads = 12;
  int out_dim = 1;
  float eps = 1e-6f;
  int num_freqs = 128;
  int point_feats = 3;
  bool embed_point_feats = false;
  int num_encoder_layers = 13;
  std::vector<int> encoder_cross_attention_levels{0, 2, 4, 8};
  int num_decoder_layers = 24;
  int num_codes = 16384;

  int head_dim() const { return width / num_heads; }
  int fourier_dim() const { return 3 * (2 * num_freqs + 1); }
};

struct TextConfig {
  int vocab_size = 49408;
  int hidden_size = 768;
  int intermediate_size = 3072;
  int num_hidden_layers = 12;
  int num_attention_heads = 12;
  int max_position_embeddings = 77;
  int projection_dim = 768;
  std::string hidden_act = "quick_gelu";
  float layer_norm_eps = 1e-5f;
  int bos_token_id = 49406;
  int eos_token_id = 49407;
  int pad_token_id = 49407;
};

struct ModelConfig {
  GptConfig gpt;
  ShapeConfig shape;
  TextConfig text;
  bool has_text = false;                 // text_model section present (golden JSON / default model)
  float guidance_scale = 3.0f;           // from golden JSON when present
  std::vector<float> bounding_box_xyz;   // from golden JSON when present (raw, not normalised)

  int cond_len() const { return 77 + (gpt.use_bbox ? 1 : 0); }
  int num_tokens() const { return shape.num_encoder_latents; }
};

// Reads a reference YAML config (open_model.yaml / open_model_v0.5.yaml) or a golden JSON config; validates.
ModelConfig load_model_config(const std::string& path);
// Reads a Hugging Face CLIPTextConfig / CLIPConfig config.json (text_config section if present).
TextConfig load_text_config(const std::string& path);
// Throws cubeforge::Error naming the offending field when the configuration is inconsistent.
void validate(const ModelConfig& cfg, const std::string& origin);

}  // namespace cubeforge
