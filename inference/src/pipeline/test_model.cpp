// Random-weight model generator (see include/cubeforge/test_model.h).
#include "cubeforge/test_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/weights.h"
#include "cubeforge/error.h"
#include "cubeforge/shape_model.h"
#include "gpt/dual_stream_gpt.h"
#include "text/clip_text_model.h"

namespace fs = std::filesystem;

namespace cubeforge {

namespace {

struct Normal {
  uint64_t s;
  bool have = false;
  double spare = 0;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double operator()() {
    if (have) {
      have = false;
      return spare;
    }
    double u1 = (double(next() >> 11) + 1.0) / 9007199254740993.0, u2 = double(next() >> 11) / 9007199254740992.0;
    double r = std::sqrt(-2.0 * std::log(u1));
    spare = r * std::sin(2 * M_PI * u2);
    have = true;
    return r * std::cos(2 * M_PI * u2);
  }
};

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

std::map<std::string, TensorToWrite> random_tensors(const TensorSpec& spec, uint64_t seed) {
  std::map<std::string, TensorToWrite> out;
  uint64_t k = 0;
  for (const auto& [name, shape] : spec) {
    Normal rng{seed * 1000003ULL + (++k) * 7919ULL};
    TensorToWrite t;
    t.shape = shape;
    size_t n = 1;
    for (auto d : shape) n *= size_t(d);
    t.data.resize(n);
    const bool embedding = name.find("embedding") != std::string::npos || ends_with(name, "wte.weight") ||
                           ends_with(name, "encoder.query") || ends_with(name, "positional_encodings") ||
                           ends_with(name, "codebook.weight") || name.find("embedder") != std::string::npos;
    if (ends_with(name, ".bias") || ends_with(name, "cb_bias")) {
      for (auto& v : t.data) v = float(0.1 * rng());
    } else if (ends_with(name, "bottleneck.block.norm.weight")) {
      for (auto& v : t.data) v = 1.0f;  // requires_grad=False in the reference: all ones
    } else if (shape.size() == 1) {  // norm weights, cb_weight
      for (auto& v : t.data) v = float(1.0 + 0.1 * rng());
    } else if (embedding) {
      for (auto& v : t.data) v = float(rng());
    } else {
      const double sd = 1.0 / std::sqrt(double(shape.back()));
      for (auto& v : t.data) v = float(sd * rng());
    }
    out[name] = std::move(t);
  }
  return out;
}

}  // namespace

ModelConfig test_model_preset(const std::string& name) {
  ModelConfig c;
  c.has_text = true;
  c.text.vocab_size = 49408;
  c.text.hidden_size = 32;
  c.text.intermediate_size = 64;
  c.text.num_hidden_layers = 2;
  c.text.num_attention_heads = 4;
  c.text.projection_dim = 32;
  auto small_shape = [&](int width, int heads, int latents, int codes, int dec_layers) {
    c.shape.width = width;
    c.shape.num_heads = heads;
    c.shape.num_encoder_latents = latents;
    c.shape.num_codes = codes;
    c.shape.embed_dim = 8;
    c.shape.num_freqs = 8;
    c.shape.num_encoder_layers = 2;
    c.shape.encoder_cross_attention_levels = {0};
    c.shape.num_decoder_layers = dec_layers;
  };
  if (name == "tiny") {
    c.gpt.n_layer = 2;
    c.gpt.n_single_layer = 1;
    c.gpt.n_head = 4;
    c.gpt.n_embd = 64;
    c.gpt.use_bbox = true;
    small_shape(64, 4, 32, 128, 2);
  } else if (name == "small") {
    c.gpt.n_layer = 4;
    c.gpt.n_single_layer = 1;
    c.gpt.n_head = 4;
    c.gpt.n_embd = 256;
    c.gpt.use_bbox = true;
    small_shape(256, 4, 128, 1024, 4);
  } else if (name == "mid") {
    c.gpt.n_layer = 8;
    c.gpt.n_single_layer = 1;
    c.gpt.n_head = 8;
    c.gpt.n_embd = 512;
    c.text.hidden_size = 64;
    c.text.intermediate_size = 128;
    small_shape(256, 4, 256, 4096, 4);
  } else if (name == "v0.1" || name == "v0.5") {
    c.has_text = false;  // real CLIP-L comes from its own directory
    c.gpt = GptConfig{};
    c.shape = ShapeConfig{};
    c.gpt.use_bbox = name == "v0.5";
    if (name == "v0.5") c.shape.num_encoder_latents = 1024;
    c.text = TextConfig{};
    c.has_text = true;
  } else {
    throw Error("unknown test model preset '" + name + "' (tiny, small, mid, v0.1, v0.5)");
  }
  c.gpt.shape_model_vocab_size = c.shape.num_codes;
  c.gpt.shape_model_embed_dim = c.shape.embed_dim;
  c.gpt.text_model_embed_dim = c.text.hidden_size;
  validate(c, "preset " + name);
  return c;
}

std::string model_config_yaml(const ModelConfig& c) {
  std::ostringstream y;
  const auto& g = c.gpt;
  const auto& s = c.shape;
  auto b = [](bool v) { return v ? "true" : "false"; };
  y << "gpt_model:\n  n_layer: " << g.n_layer << "\n  n_single_layer: " << g.n_single_layer << "\n  rope_theta: " << g.rope_theta
    << "\n  n_head: " << g.n_head << "\n  n_embd: " << g.n_embd << "\n  bias: " << b(g.bias) << "\n  eps: " << g.eps
    << "\n  shape_model_vocab_size: " << g.shape_model_vocab_size << "\n  text_model_embed_dim: " << g.text_model_embed_dim
    << "\n  use_pooled_text_embed: " << b(g.use_pooled_text_embed) << "\n  shape_model_embed_dim: " << g.shape_model_embed_dim
    << "\n  encoder_with_cls_token: " << b(g.encoder_with_cls_token) << "\n  use_bbox: " << b(g.use_bbox) << "\n";
  y << "shape_model:\n  encoder_with_cls_token: " << b(s.encoder_with_cls_token) << "\n  num_encoder_latents: "
    << s.num_encoder_latents << "\n  num_decoder_latents: " << s.num_decoder_latents << "\n  embed_dim: " << s.embed_dim
    << "\n  width: " << s.width << "\n  num_heads: " << s.num_heads << "\n  out_dim: " << s.out_dim << "\n  eps: " << s.eps
    << "\n  num_freqs: " << s.num_freqs << "\n  point_feats: " << s.point_feats << "\n  embed_point_feats: "
    << b(s.embed_point_feats) << "\n  num_encoder_layers: " << s.num_encoder_layers << "\n  encoder_cross_attention_levels: [";
  for (size_t i = 0; i < s.encoder_cross_attention_levels.size(); ++i) y << (i ? ", " : "") << s.encoder_cross_attention_levels[i];
  y << "]\n  num_decoder_layers: " << s.num_decoder_layers << "\n  num_codes: " << s.num_codes << "\n";
  y << "text_model_pretrained_model_name_or_path: clip\n";
  return y.str();
}

void write_random_model(const std::string& dir, const ModelConfig& cfg, const std::string& tokenizer_dir, uint64_t seed,
                        StorageType storage) {
  for (const char* f : {"vocab.json", "merges.txt"})
    if (!fs::exists(fs::path(tokenizer_dir) / f)) throw Error("tokenizer directory '" + tokenizer_dir + "' has no " + f);
  fs::create_directories(fs::path(dir) / "clip");
  write_file_atomic((fs::path(dir) / "config.yaml").string(), model_config_yaml(cfg));
  write_safetensors((fs::path(dir) / "shape_gpt.safetensors").string(),
                    random_tensors(DualStreamGpt::tensor_spec(cfg.gpt), seed), storage);
  write_safetensors((fs::path(dir) / "shape_tokenizer.safetensors").string(),
                    random_tensors(ShapeModel::tensor_spec(cfg.shape), seed + 1), storage);
  const auto& t = cfg.text;
  write_safetensors((fs::path(dir) / "clip" / "model.safetensors").string(),
                    random_tensors(ClipTextModel::tensor_spec(t, true), seed + 2), storage);
  nlohmann::json cj = {{"architectures", {"CLIPTextModelWithProjection"}},
                       {"model_type", "clip_text_model"},
                       {"vocab_size", t.vocab_size},
                       {"hidden_size", t.hidden_size},
                       {"intermediate_size", t.intermediate_size},
                       {"num_hidden_layers", t.num_hidden_layers},
                       {"num_attention_heads", t.num_attention_heads},
                       {"max_position_embeddings", t.max_position_embeddings},
                       {"projection_dim", t.projection_dim},
                       {"hidden_act", t.hidden_act},
                       {"layer_norm_eps", t.layer_norm_eps},
                       {"bos_token_id", t.bos_token_id},
                       {"eos_token_id", t.eos_token_id},
                       {"pad_token_id", t.pad_token_id}};
  write_file_atomic((fs::path(dir) / "clip" / "config.json").string(), cj.dump(2));
  for (const char* f : {"vocab.json", "merges.txt"}) {
    const auto dst = fs::path(dir) / "clip" / f;
    fs::copy_file(fs::path(tokenizer_dir) / f, dst, fs::copy_options::overwrite_existing);
    fs::permissions(dst, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  }
}

}  // namespace cubeforge
