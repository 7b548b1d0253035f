// Loads model configurations: reference YAML (OmegaConf-style gpt_model/shape_model sections) and golden JSON
// (same sections + text_model in CLIPTextConfig keys). Unknown keys inside a section are rejected, as the
// reference's dataclass construction would; validation names the offending field.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "cubeforge/error.h"
#include "cubeforge/model_config.h"

namespace cubeforge {

namespace {

// A config document is read through this small variant so YAML and JSON share the field tables.
struct Node {
  std::function<bool(const std::string&)> has;
  std::function<std::vector<std::string>()> keys;
  std::function<double(const std::string&)> num;
  std::function<bool(const std::string&)> boolean;
  std::function<std::string(const std::string&)> str;
  std::function<std::vector<int>(const std::string&)> ints;
};

Node from_json(const nlohmann::json& j, const std::string& where) {
  Node n;
  n.has = [&j](const std::string& k) { return j.contains(k) && !j[k].is_null(); };
  n.keys = [&j] {
    std::vector<std::string> r;
    for (auto it = j.begin(); it != j.end(); ++it) r.push_back(it.key());
    return r;
  };
  n.num = [&j, where](const std::string& k) {
    if (!j[k].is_number()) throw Error(where + "." + k + " must be a number");
    return j[k].get<double>();
  };
  n.boolean = [&j, where](const std::string& k) {
    if (!j[k].is_boolean()) throw Error(where + "." + k + " must be true or false");
    return j[k].get<bool>();
  };
  n.str = [&j, where](const std::string& k) {
    if (!j[k].is_string()) throw Error(where + "." + k + " must be a string");
    return j[k].get<std::string>();
  };
  n.ints = [&j, where](const std::string& k) {
    if (!j[k].is_array()) throw Error(where + "." + k + " must be a list of integers");
    std::vector<int> r;
    for (const auto& v : j[k]) {
      if (!v.is_number_integer()) throw Error(where + "." + k + " must be a list of integers");
      r.push_back(v.get<int>());
    }
    return r;
  };
  return n;
}

Node from_yaml(const YAML::Node& y, const std::string& where) {
  Node n;
  n.has = [y](const std::string& k) { return y[k] && !y[k].IsNull(); };
  n.keys = [y] {
    std::vector<std::string> r;
    for (auto it = y.begin(); it != y.end(); ++it) r.push_back(it->first.as<std::string>());
    return r;
  };
  n.num = [y, where](const std::string& k) {
    try {
      return y[k].as<double>();
    } catch (const std::exception&) {
      throw Error(where + "." + k + " must be a number");
    }
  };
  n.boolean = [y, where](const std::string& k) {
    try {
      return y[k].as<bool>();
    } catch (const std::exception&) {
      throw Error(where + "." + k + " must be true or false");
    }
  };
  n.str = [y, where](const std::string& k) {
    try {
      return y[k].as<std::string>();
    } catch (const std::exception&) {
      throw Error(where + "." + k + " must be a string");
    }
  };
  n.ints = [y, where](const std::string& k) {
    try {
      return y[k].as<std::vector<int>>();
    } catch (const std::exception&) {
      throw Error(where + "." + k + " must be a list of integers");
    }
  };
  return n;
}

int as_int(const Node& n, const std::string& k, const std::string& where) {
  double v = n.num(k);
  if (v != static_cast<double>(static_cast<long long>(v))) throw Error(where + "." + k + " must be an integer");
  return static_cast<int>(v);
}

struct Field {
  std::function<void(const Node&, const std::string&)> read;
};

void read_section(const Node& n, const std::string& where, const std::map<std::string, Field>& fields,
                  const std::vector<std::string>& ignored) {
  for (const auto& k : n.keys()) {
    auto it = fields.find(k);
    if (it != fields.end()) {
      if (n.has(k)) it->second.read(n, k);
      continue;
    }
    if (std::find(ignored.begin(), ignored.end(), k) != ignored.end()) continue;
    throw Error(where + ": unknown key '" + k + "'");
  }
}

#define CF_INT(S, F) {#F, {[&S, &where](const Node& n, const std::string& k) { S.F = as_int(n, k, where); }}}
#define CF_FLT(S, F) {#F, {[&S](const Node& n, const std::string& k) { S.F = static_cast<decltype(S.F)>(n.num(k)); }}}
#define CF_BOOL(S, F) {#F, {[&S](const Node& n, const std::string& k) { S.F = n.boolean(k); }}}

void read_gpt(const Node& n, GptConfig& g, const std::string& where) {
  std::map<std::string, Field> f = {CF_INT(g, n_layer), CF_INT(g, n_single_layer), CF_FLT(g, rope_theta),
                                    CF_INT(g, n_head), CF_INT(g, n_embd), CF_BOOL(g, bias), CF_FLT(g, eps),
                                    CF_INT(g, shape_model_vocab_size), CF_INT(g, text_model_embed_dim),
                                    CF_BOOL(g, use_pooled_text_embed), CF_INT(g, shape_model_embed_dim),
                                    CF_BOOL(g, encoder_with_cls_token), CF_BOOL(g, use_bbox)};
  read_section(n, where, f, {"checkpoint_path"});
}

void read_shape(const Node& n, ShapeConfig& s, const std::string& where) {
  std::map<std::string, Field> f = {
      CF_BOOL(s, encoder_with_cls_token), CF_INT(s, num_encoder_latents), CF_INT(s, num_decoder_latents),
      CF_INT(s, embed_dim), CF_INT(s, width), CF_INT(s, num_heads), CF_INT(s, out_dim), CF_FLT(s, eps),
      CF_INT(s, num_freqs), CF_INT(s, point_feats), CF_BOOL(s, embed_point_feats), CF_INT(s, num_encoder_layers),
      CF_INT(s, num_decoder_layers), CF_INT(s, num_codes),
      {"encoder_cross_attention_levels",
       {[&s](const Node& nd, const std::string& k) { s.encoder_cross_attention_levels = nd.ints(k); }}}};
  read_section(n, where, f, {"checkpoint_path"});
}

void read_text(const Node& n, TextConfig& t, const std::string& where) {
  std::map<std::string, Field> f = {
      CF_INT(t, vocab_size), CF_INT(t, hidden_size), CF_INT(t, intermediate_size), CF_INT(t, num_hidden_layers),
      CF_INT(t, num_attention_heads), CF_INT(t, max_position_embeddings), CF_INT(t, projection_dim),
      CF_FLT(t, layer_norm_eps), CF_INT(t, bos_token_id), CF_INT(t, eos_token_id), CF_INT(t, pad_token_id),
      {"hidden_act", {[&t](const Node& nd, const std::string& k) { t.hidden_act = nd.str(k); }}}};
  // HF config.json carries many generic keys (architectures, dropout, torch_dtype...): accept them silently.
  for (const auto& k : n.keys())
    if (f.count(k) && n.has(k)) f[k].read(n, k);
  (void)where;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open config file '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool is_json_path(const std::string& path) {
  auto ext = std::filesystem::path(path).extension().string();
  return ext == ".json";
}

}  // namespace

ModelConfig load_model_config(const std::string& path) {
  ModelConfig cfg;
  const std::string text = read_file(path);
  try {
    if (is_json_path(path)) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(text);
      } catch (const std::exception& e) {
        throw Error(std::string("malformed JSON: ") + e.what());
      }
      if (!j.is_object() || !j.contains("gpt_model") || !j.contains("shape_model"))
        throw Error("needs 'gpt_model' and 'shape_model' sections");
      read_gpt(from_json(j["gpt_model"], "gpt_model"), cfg.gpt, "gpt_model");
      read_shape(from_json(j["shape_model"], "shape_model"), cfg.shape, "shape_model");
      if (j.contains("text_model") && j["text_model"].is_object()) {
        read_text(from_json(j["text_model"], "text_model"), cfg.text, "text_model");
        cfg.has_text = true;
      }
      if (j.contains("guidance_scale") && j["guidance_scale"].is_number())
        cfg.guidance_scale = j["guidance_scale"].get<float>();
      if (j.contains("bounding_box_xyz") && j["bounding_box_xyz"].is_array())
        for (const auto& v : j["bounding_box_xyz"]) cfg.bounding_box_xyz.push_back(v.get<float>());
    } else {
      YAML::Node y;
      try {
        y = YAML::Load(text);
      } catch (const std::exception& e) {
        throw Error(std::string("malformed YAML: ") + e.what());
      }
      if (!y.IsMap() || !y["gpt_model"] || !y["shape_model"]) throw Error("needs 'gpt_model' and 'shape_model' sections");
      read_gpt(from_yaml(y["gpt_model"], "gpt_model"), cfg.gpt, "gpt_model");
      read_shape(from_yaml(y["shape_model"], "shape_model"), cfg.shape, "shape_model");
      if (y["text_model"] && y["text_model"].IsMap()) {
        read_text(from_yaml(y["text_model"], "text_model"), cfg.text, "text_model");
        cfg.has_text = true;
      }
    }
    validate(cfg, path);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("config '", 0) == 0) throw;
    throw Error("config '" + path + "': " + msg);
  }
  return cfg;
}

TextConfig load_text_config(const std::string& path) {
  TextConfig t;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error("config '" + path + "': malformed JSON: " + e.what());
  }
  const nlohmann::json& tj = j.contains("text_config") ? j["text_config"] : j;
  if (!tj.is_object()) throw Error("config '" + path + "': text config is not an object");
  read_text(from_json(tj, "text_config"), t, "text_config");
  if (t.hidden_size <= 0 || t.num_attention_heads <= 0 || t.hidden_size % t.num_attention_heads)
    throw Error("config '" + path + "': hidden_size must be a positive multiple of num_attention_heads");
  if (t.hidden_act != "quick_gelu" && t.hidden_act != "gelu")
    throw Error("config '" + path + "': hidden_act '" + t.hidden_act + "' is not supported (quick_gelu, gelu)");
  return t;
}

void validate(const ModelConfig& c, const std::string& origin) {
  auto req = [&](bool ok, const std::string& msg) {
    if (!ok) throw Error("config '" + origin + "': " + msg);
  };
  const auto& g = c.gpt;
  const auto& s = c.shape;
  req(g.n_layer >= 1, "gpt_model.n_layer must be at least 1 (the last dual block is cond_pre_only)");
  req(g.n_single_layer >= 0, "gpt_model.n_single_layer must be non-negative");
  req(g.n_head > 0 && g.n_embd > 0, "gpt_model.n_head and n_embd must be positive");
  req(g.n_embd % g.n_head == 0, "gpt_model.n_embd (" + std::to_string(g.n_embd) + ") must be divisible by n_head (" +
                                    std::to_string(g.n_head) + ")");
  req(g.head_dim() % 2 == 0, "gpt_model head dim must be even for RoPE");
  req(g.rope_theta > 0, "gpt_model.rope_theta must be positive");
  req(g.eps > 0, "gpt_model.eps must be positive");
  req(g.shape_model_vocab_size > 0, "gpt_model.shape_model_vocab_size must be positive");
  req(g.text_model_embed_dim > 0, "gpt_model.text_model_embed_dim must be positive");
  req(!g.use_pooled_text_embed, "gpt_model.use_pooled_text_embed=true is not supported (the reference uses all 77 states)");
  req(g.shape_model_embed_dim == s.embed_dim, "gpt_model.shape_model_embed_dim must equal shape_model.embed_dim");
  req(g.shape_model_vocab_size == s.num_codes, "gpt_model.shape_model_vocab_size must equal shape_model.num_codes");
  req(s.num_encoder_latents > 0, "shape_model.num_encoder_latents must be positive");
  req(s.width > 0 && s.num_heads > 0 && s.width % s.num_heads == 0,
      "shape_model.width (" + std::to_string(s.width) + ") must be divisible by num_heads (" + std::to_string(s.num_heads) + ")");
  req(s.out_dim == 1, "shape_model.out_dim must be 1 (occupancy)");
  req(s.num_decoder_latents == 0, "shape_model.num_decoder_latents must be 0 (as in the reference)");
  req(s.num_freqs > 0 && s.embed_dim > 0 && s.num_codes > 0, "shape_model num_freqs/embed_dim/num_codes must be positive");
  req(s.num_decoder_layers >= 0 && s.num_encoder_layers >= 0, "shape_model layer counts must be non-negative");
  for (int l : s.encoder_cross_attention_levels)
    req(l >= 0 && l < s.num_encoder_layers, "shape_model.encoder_cross_attention_levels has level " + std::to_string(l) +
                                                " outside 0.." + std::to_string(s.num_encoder_layers - 1));
  if (c.has_text) {
    const auto& t = c.text;
    req(t.hidden_size % t.num_attention_heads == 0, "text_model.hidden_size must be divisible by num_attention_heads");
    req(t.hidden_size == g.text_model_embed_dim, "text_model.hidden_size must equal gpt_model.text_model_embed_dim");
    req(t.max_position_embeddings >= 77, "text_model.max_position_embeddings must be at least 77");
  }
}

}  // namespace cubeforge
