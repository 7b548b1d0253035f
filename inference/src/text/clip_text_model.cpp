// CLIP text tower forward pass (see clip_text_model.h).
#include "text/clip_text_model.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu_ops.h"
#include "cubeforge/error.h"

namespace cubeforge {

namespace {
std::string L(int i) { return "text_model.encoder.layers." + std::to_string(i) + "."; }
}  // namespace

TensorSpec ClipTextModel::tensor_spec(const TextConfig& cfg, bool with_projection) {
  const int64_t H = cfg.hidden_size, F = cfg.intermediate_size;
  TensorSpec spec = {
      {"text_model.embeddings.token_embedding.weight", {cfg.vocab_size, H}},
      {"text_model.embeddings.position_embedding.weight", {cfg.max_position_embeddings, H}},
      {"text_model.final_layer_norm.weight", {H}},
      {"text_model.final_layer_norm.bias", {H}},
  };
  for (int i = 0; i < cfg.num_hidden_layers; ++i) {
    for (const char* ln : {"layer_norm1", "layer_norm2"}) {
      spec[L(i) + ln + ".weight"] = {H};
      spec[L(i) + ln + ".bias"] = {H};
    }
    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      spec[L(i) + "self_attn." + p + ".weight"] = {H, H};
      spec[L(i) + "self_attn." + p + ".bias"] = {H};
    }
    spec[L(i) + "mlp.fc1.weight"] = {F, H};
    spec[L(i) + "mlp.fc1.bias"] = {F};
    spec[L(i) + "mlp.fc2.weight"] = {H, F};
    spec[L(i) + "mlp.fc2.bias"] = {H};
  }
  if (with_projection) spec["text_projection.weight"] = {cfg.projection_dim, H};
  return spec;
}

std::unique_ptr<ClipTextModel> ClipTextModel::load(const TextConfig& cfg, const std::string& path) {
  auto st = SafeTensors::open(path);
  TensorSpec spec = tensor_spec(cfg, st.contains("text_projection.weight"));
  auto m = std::unique_ptr<ClipTextModel>(new ClipTextModel());
  m->cfg_ = cfg;
  m->has_projection_ = spec.count("text_projection.weight") > 0;
  // A full CLIPModel (or an older export) carries tensors the text tower does not use: tolerate exactly those.
  std::set<std::string> expected;
  for (const auto& [n, s] : spec) expected.insert(n);
  for (const auto& n : st.names()) {
    const bool other = n.rfind("vision_model.", 0) == 0 || n == "visual_projection.weight" || n == "logit_scale" ||
                       n == "text_model.embeddings.position_ids";
    if (other) expected.insert(n);
  }
  st.check_keys(expected);
  m->w_ = WeightStore::load_subset(st, spec);
  return m;
}

void ClipTextModel::forward(const int64_t* ids, const int64_t* mask, int B, int T, float* last_hidden,
                            float* text_embeds) const {
  const int H = cfg_.hidden_size, F = cfg_.intermediate_size, nh = cfg_.num_attention_heads, hd = H / nh;
  if (T > cfg_.max_position_embeddings)
    throw Error("CLIP input of " + std::to_string(T) + " tokens exceeds max_position_embeddings");
  const float* tok = w_.get("text_model.embeddings.token_embedding.weight");
  const float* pos = w_.get("text_model.embeddings.position_embedding.weight");
  std::vector<float> x(size_t(T) * H), h(size_t(T) * H), qkv(size_t(3) * T * H), a(size_t(T) * H), f(size_t(T) * F);
  const float eps = cfg_.layer_norm_eps;
  for (int b = 0; b < B; ++b) {
    const int64_t* id = ids + size_t(b) * T;
    const int64_t* mk = mask + size_t(b) * T;
    for (int t = 0; t < T; ++t) {
      if (id[t] < 0 || id[t] >= cfg_.vocab_size)
        throw Error("CLIP token id " + std::to_string(id[t]) + " outside the vocabulary of " + std::to_string(cfg_.vocab_size));
      for (int d = 0; d < H; ++d) x[size_t(t) * H + d] = tok[size_t(id[t]) * H + d] + pos[size_t(t) * H + d];
    }
    // Causal + key padding: query t sees keys j ≤ t with mask[j] = 1. Masks are BOS..EOS ones then zeros,
    // so the visible keys are a prefix; a general mask is handled by the explicit check below.
    int valid = 0;
    while (valid < T && mk[valid]) ++valid;
    for (int t = valid; t < T; ++t)
      if (mk[t]) throw Error("CLIP attention mask must be ones followed by zeros");
    auto visible = [valid](int t) { return std::max(1, std::min(t + 1, valid)); };
    for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
      const std::string p = L(l);
      cpu::layer_norm(x.data(), T, H, eps, w_.get(p + "layer_norm1.weight"), w_.get(p + "layer_norm1.bias"), h.data());
      float* q = qkv.data();
      float* k = q + size_t(T) * H;
      float* v = k + size_t(T) * H;
      cpu::linear(h.data(), T, H, w_.get(p + "self_attn.q_proj.weight"), w_.get(p + "self_attn.q_proj.bias"), H, q);
      cpu::linear(h.data(), T, H, w_.get(p + "self_attn.k_proj.weight"), w_.get(p + "self_attn.k_proj.bias"), H, k);
      cpu::linear(h.data(), T, H, w_.get(p + "self_attn.v_proj.weight"), w_.get(p + "self_attn.v_proj.bias"), H, v);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      for (size_t i = 0; i < size_t(T) * H; ++i) q[i] *= scale;  // HF scales q after the projection
      cpu::attention(q, H, T, k, v, H, nh, hd, 1.0f, visible, a.data(), H);
      cpu::linear(a.data(), T, H, w_.get(p + "self_attn.out_proj.weight"), w_.get(p + "self_attn.out_proj.bias"), H,
                  x.data(), true);
      cpu::layer_norm(x.data(), T, H, eps, w_.get(p + "layer_norm2.weight"), w_.get(p + "layer_norm2.bias"), h.data());
      cpu::linear(h.data(), T, H, w_.get(p + "mlp.fc1.weight"), w_.get(p + "mlp.fc1.bias"), F, f.data());
      if (cfg_.hidden_act == "quick_gelu") {
        cpu::quick_gelu_inplace(f.data(), f.size());
      } else {
        cpu::gelu_erf_inplace(f.data(), f.size());
      }
      cpu::linear(f.data(), T, F, w_.get(p + "mlp.fc2.weight"), w_.get(p + "mlp.fc2.bias"), H, x.data(), true);
    }
    float* out = last_hidden + size_t(b) * T * H;
    cpu::layer_norm(x.data(), T, H, eps, w_.get("text_model.final_layer_norm.weight"),
                    w_.get("text_model.final_layer_norm.bias"), out);
    if (text_embeds && has_projection_) {
      int eos_pos = 0;  // first EOS position (HF pooling for eos_token_id != 2)
      while (eos_pos < T - 1 && id[eos_pos] != cfg_.eos_token_id) ++eos_pos;
      cpu::linear(out + size_t(eos_pos) * H, 1, H, w_.get("text_projection.weight"), nullptr, cfg_.projection_dim,
                  text_embeds + size_t(b) * cfg_.projection_dim);
    }
  }
}

}  // namespace cubeforge
