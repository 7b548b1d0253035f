// ShapeModel: strict loading of the shape tokenizer checkpoint (spec §2.2), the normalized codebook (§2.3),
// token ids → latents (§8.1-8.2), the encoder path points+normals → token ids (§9 steps 3-5) and the live-preview
// decodes of a token prefix. fp32 throughout (the reference's CPU/no-autocast numerics).
#include "cubeforge/shape_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "core/cpu_ops.h"
#include "cubeforge/error.h"
#include "cubeforge/safetensors.h"
#include "shape/shape_kernels.h"
#include "shape/shape_weights.h"

namespace cubeforge {

namespace {

using shape::CrossAttnWeights;
using shape::SelfAttnWeights;

void check_config(const ShapeConfig& c) {
  auto bad = [](const std::string& m) { throw Error("shape_model configuration: " + m); };
  if (c.width <= 0 || c.num_heads <= 0 || c.width % c.num_heads != 0)
    bad("width (" + std::to_string(c.width) + ") must be a positive multiple of num_heads (" +
        std::to_string(c.num_heads) + ")");
  if (c.num_encoder_latents <= 0) bad("num_encoder_latents must be positive");
  if (c.num_decoder_latents != 0) bad("num_decoder_latents must be 0 (decoder query padding is not supported)");
  if (c.embed_dim <= 0) bad("embed_dim must be positive");
  if (c.num_codes <= 0) bad("num_codes must be positive");
  if (c.num_freqs <= 0) bad("num_freqs must be positive");
  if (c.out_dim != 1) bad("out_dim must be 1 (one occupancy logit per point)");
  if (c.point_feats != 0 && c.point_feats != 3) bad("point_feats must be 3 (normals) or 0");
  if (c.embed_point_feats) bad("embed_point_feats=true is not supported");
  if (c.num_encoder_layers < 0 || c.num_decoder_layers < 0) bad("layer counts must be >= 0");
  for (int l : c.encoder_cross_attention_levels)
    if (l < 0 || l >= c.num_encoder_layers)
      bad("encoder_cross_attention_levels entry " + std::to_string(l) + " is not a layer index");
}

void add_linear(TensorSpec& s, const std::string& p, int64_t out, int64_t in, bool bias = true) {
  s[p + ".weight"] = {out, in};
  if (bias) s[p + ".bias"] = {out};
}

void add_self_attn(TensorSpec& s, const std::string& p, int64_t W, int64_t hd) {
  add_linear(s, p + "attn.c_qk", 2 * W, W);
  add_linear(s, p + "attn.c_v", W, W);
  add_linear(s, p + "attn.c_proj", W, W);
  s[p + "attn.q_norm.weight"] = {hd};
  s[p + "attn.k_norm.weight"] = {hd};
  add_linear(s, p + "mlp.up_proj", 4 * W, W);
  add_linear(s, p + "mlp.down_proj", W, 4 * W);
}

void add_cross_attn(TensorSpec& s, const std::string& p, int64_t W) {
  for (const char* n : {"c_q", "c_k", "c_v", "c_proj"}) add_linear(s, p + "attn." + n, W, W);
  add_linear(s, p + "mlp.up_proj", 4 * W, W);
  add_linear(s, p + "mlp.down_proj", W, 4 * W);
}

SelfAttnWeights self_ptrs(const WeightStore& w, const std::string& p) {
  return {w.get(p + "attn.c_qk.weight"), w.get(p + "attn.c_qk.bias"), w.get(p + "attn.c_v.weight"),
          w.get(p + "attn.c_v.bias"), w.get(p + "attn.c_proj.weight"), w.get(p + "attn.c_proj.bias"),
          w.get(p + "attn.q_norm.weight"), w.get(p + "attn.k_norm.weight"), w.get(p + "mlp.up_proj.weight"),
          w.get(p + "mlp.up_proj.bias"), w.get(p + "mlp.down_proj.weight"), w.get(p + "mlp.down_proj.bias")};
}

CrossAttnWeights cross_ptrs(const WeightStore& w, const std::string& p) {
  return {w.get(p + "attn.c_q.weight"), w.get(p + "attn.c_q.bias"), w.get(p + "attn.c_k.weight"),
          w.get(p + "attn.c_k.bias"), w.get(p + "attn.c_v.weight"), w.get(p + "attn.c_v.bias"),
          w.get(p + "attn.c_proj.weight"), w.get(p + "attn.c_proj.bias"), w.get(p + "mlp.up_proj.weight"),
          w.get(p + "mlp.up_proj.bias"), w.get(p + "mlp.down_proj.weight"), w.get(p + "mlp.down_proj.bias")};
}

// Rows z[N, E] → latents: c_out(z) + positional_encodings[0:N], then the decoder layers.
Latents run_decoder(const ShapeWeights& w, const std::vector<float>& z, int T, const CancelToken* cancel) {
  Latents lat;
  lat.count = T;
  lat.width = w.W;
  lat.data.resize(size_t(T) * w.W);
  shape::linear(z.data(), T, w.E, w.c_out_w, w.c_out_b, w.W, lat.data.data());
  for (int i = 0; i < T; ++i) {
    float* r = lat.data.data() + size_t(i) * w.W;
    const float* p = w.pos_enc + size_t(i) * w.W;
    for (int d = 0; d < w.W; ++d) r[d] += p[d];
  }
  const bool par = shape::worth_threading(T, w.W, T);
  cpu::SerialGemmScope serial(!par);
  for (const auto& L : w.dec_layers) {
    throw_if_cancelled(cancel);
    shape::self_attn_layer(lat.data.data(), T, w.W, w.H, w.ln_eps, L, par);
  }
  throw_if_cancelled(cancel);
  return lat;
}

void check_ids(const ShapeWeights& w, const std::vector<int>& ids, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= w.codes)
      throw Error(std::string(what) + ": token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is out of range [0, " + std::to_string(w.codes) + ")");
}

}  // namespace

const char* to_string(PreviewFill f) {
  switch (f) {
    case PreviewFill::Truncate: return "truncate";
    case PreviewFill::MeanCode: return "mean";
    case PreviewFill::RepeatPrefix: return "repeat";
    case PreviewFill::ZeroCode: return "zero";
  }
  return "?";
}

PreviewFill preview_fill_from_string(const std::string& s) {
  for (PreviewFill f : {PreviewFill::Truncate, PreviewFill::MeanCode, PreviewFill::RepeatPrefix, PreviewFill::ZeroCode})
    if (s == to_string(f)) return f;
  throw Error("unknown preview fill '" + s + "' (expected truncate, mean, repeat or zero)");
}

std::map<std::string, std::vector<int64_t>> ShapeModel::tensor_spec(const ShapeConfig& config) {
  check_config(config);
  const int64_t W = config.width, hd = config.head_dim(), E = config.embed_dim, N = config.num_encoder_latents;
  const int64_t F = config.fourier_dim();
  TensorSpec spec;
  spec["embedder.weight"] = {3, config.num_freqs};
  spec["encoder.query"] = {N + (config.encoder_with_cls_token ? 1 : 0), W};
  add_linear(spec, "encoder.feat_in.in_layer", W, F + config.point_feats);
  add_linear(spec, "encoder.feat_in.out_layer", W, W);
  const std::set<int> cross_levels(config.encoder_cross_attention_levels.begin(),
                                   config.encoder_cross_attention_levels.end());
  for (int i = 0; i < config.num_encoder_layers; ++i) {
    const std::string p = "encoder.blocks." + std::to_string(i) + ".";
    if (cross_levels.count(i))
      add_cross_attn(spec, p, W);
    else
      add_self_attn(spec, p, W, hd);
  }
  spec["encoder.ln_f.weight"] = {W};
  spec["encoder.ln_f.bias"] = {W};

  spec["bottleneck.block.codebook.weight"] = {config.num_codes, E};
  add_linear(spec, "bottleneck.block.c_in", E, W);
  add_linear(spec, "bottleneck.block.c_x", E, W);
  add_linear(spec, "bottleneck.block.c_out", W, E);
  spec["bottleneck.block.norm.weight"] = {E};
  spec["bottleneck.block.cb_weight"] = {E};
  spec["bottleneck.block.cb_bias"] = {E};

  spec["decoder.positional_encodings"] = {N, W};
  for (int i = 0; i < config.num_decoder_layers; ++i)
    add_self_attn(spec, "decoder.blocks." + std::to_string(i) + ".", W, hd);

  add_linear(spec, "occupancy_decoder.query_in.in_layer", W, F);
  add_linear(spec, "occupancy_decoder.query_in.out_layer", W, W);
  add_cross_attn(spec, "occupancy_decoder.attn_out.", W);
  spec["occupancy_decoder.ln_f.weight"] = {W};
  spec["occupancy_decoder.ln_f.bias"] = {W};
  add_linear(spec, "occupancy_decoder.c_head", config.out_dim, W);
  return spec;
}

std::unique_ptr<ShapeModel> ShapeModel::load(const ShapeConfig& config, const std::string& path) {
  check_config(config);
  SafeTensors file = SafeTensors::open(path);

  auto w = std::make_shared<ShapeWeights>();
  w->cfg = config;
  w->path = path;
  w->N = config.num_encoder_latents;
  w->W = config.width;
  w->H = config.num_heads;
  w->hd = config.head_dim();
  w->E = config.embed_dim;
  w->codes = config.num_codes;
  w->nf = config.num_freqs;
  w->F = config.fourier_dim();
  w->ln_eps = config.eps;
  const int E = w->E;

  TensorSpec spec = tensor_spec(config);
  // The shared embedder is stored once; accept any of its three module names (aliases are resolved by the reader).
  const std::vector<std::string> embed_names = {"embedder.weight", "encoder.embedder.weight",
                                                "occupancy_decoder.embedder.weight"};
  std::string embed_name;
  const auto stored = file.names();
  const std::set<std::string> stored_set(stored.begin(), stored.end());
  spec.erase("embedder.weight");
  for (const auto& n : embed_names)
    if (stored_set.count(n)) {
      spec[n] = {3, w->nf};
      if (embed_name.empty()) embed_name = n;
    }
  if (embed_name.empty()) {
    embed_name = "embedder.weight";  // reported as missing by the strict check below unless aliased
    spec[embed_name] = {3, w->nf};
  }
  w->enc_query_rows = w->N + (config.encoder_with_cls_token ? 1 : 0);
  const std::set<int> cross_levels(config.encoder_cross_attention_levels.begin(),
                                   config.encoder_cross_attention_levels.end());

  w->store = WeightStore::load(file, spec);
  const WeightStore& s = w->store;

  w->embed_w = s.get(embed_name);
  w->carrier = shape::fourier_carrier(w->nf);
  w->enc_query = s.get("encoder.query");
  w->enc_in_w = s.get("encoder.feat_in.in_layer.weight");
  w->enc_in_b = s.get("encoder.feat_in.in_layer.bias");
  w->enc_out_w = s.get("encoder.feat_in.out_layer.weight");
  w->enc_out_b = s.get("encoder.feat_in.out_layer.bias");
  for (int i = 0; i < config.num_encoder_layers; ++i) {
    const std::string p = "encoder.blocks." + std::to_string(i) + ".";
    ShapeWeights::EncLayer L;
    L.cross = cross_levels.count(i) > 0;
    if (L.cross)
      L.cross_w = cross_ptrs(s, p);
    else
      L.self = self_ptrs(s, p);
    w->enc_layers.push_back(L);
  }
  w->enc_lnf_w = s.get("encoder.ln_f.weight");
  w->enc_lnf_b = s.get("encoder.ln_f.bias");

  w->c_in_w = s.get("bottleneck.block.c_in.weight");
  w->c_in_b = s.get("bottleneck.block.c_in.bias");
  w->c_out_w = s.get("bottleneck.block.c_out.weight");
  w->c_out_b = s.get("bottleneck.block.c_out.bias");
  w->vq_norm_w = s.get("bottleneck.block.norm.weight");

  // §2.3: C = RMSNorm_1e-5(codebook ⊙ cb_weight + cb_bias) ⊙ norm.weight
  {
    const float* cb = s.get("bottleneck.block.codebook.weight");
    const float* cw = s.get("bottleneck.block.cb_weight");
    const float* cbb = s.get("bottleneck.block.cb_bias");
    w->codebook.resize(size_t(w->codes) * E);
    w->code_sqnorm.resize(w->codes);
    w->mean_code.assign(E, 0.0f);
    std::vector<double> mean(E, 0.0);
    for (int c = 0; c < w->codes; ++c) {
      float* r = w->codebook.data() + size_t(c) * E;
      float ss = 0;
      for (int d = 0; d < E; ++d) {
        r[d] = cb[size_t(c) * E + d] * cw[d] + cbb[d];
        ss += r[d] * r[d];
      }
      const float inv = 1.0f / std::sqrt(ss / float(E) + 1e-5f);
      float n2 = 0;
      for (int d = 0; d < E; ++d) {
        r[d] = (r[d] * inv) * w->vq_norm_w[d];
        n2 += r[d] * r[d];
        mean[d] += r[d];
      }
      w->code_sqnorm[c] = n2;
    }
    for (int d = 0; d < E; ++d) w->mean_code[d] = float(mean[d] / w->codes);
  }

  w->pos_enc = s.get("decoder.positional_encodings");
  for (int i = 0; i < config.num_decoder_layers; ++i)
    w->dec_layers.push_back(self_ptrs(s, "decoder.blocks." + std::to_string(i) + "."));

  w->q_in_w = s.get("occupancy_decoder.query_in.in_layer.weight");
  w->q_in_b = s.get("occupancy_decoder.query_in.in_layer.bias");
  w->q_out_w = s.get("occupancy_decoder.query_in.out_layer.weight");
  w->q_out_b = s.get("occupancy_decoder.query_in.out_layer.bias");
  w->occ = cross_ptrs(s, "occupancy_decoder.attn_out.");
  w->occ_lnf_w = s.get("occupancy_decoder.ln_f.weight");
  w->occ_lnf_b = s.get("occupancy_decoder.ln_f.bias");
  w->head_w = s.get("occupancy_decoder.c_head.weight");
  w->head_b = s.get("occupancy_decoder.c_head.bias");

  std::unique_ptr<ShapeModel> m(new ShapeModel());
  m->w_ = std::move(w);
  return m;
}

ShapeModel::~ShapeModel() = default;

const ShapeConfig& ShapeModel::config() const { return w_->cfg; }
int ShapeModel::num_tokens() const { return w_->N; }
int ShapeModel::num_codes() const { return w_->codes; }
size_t ShapeModel::parameter_count() const { return w_->store.parameter_count(); }
std::vector<float> ShapeModel::codebook() const { return w_->codebook; }

Latents ShapeModel::decode_tokens(const std::vector<int>& ids, const CancelToken* cancel) const {
  const ShapeWeights& w = *w_;
  if (ids.size() != size_t(w.N))
    throw Error("decode_tokens: expected " + std::to_string(w.N) + " token ids, got " + std::to_string(ids.size()));
  check_ids(w, ids, "decode_tokens");
  std::vector<float> z(size_t(w.N) * w.E);
  for (int i = 0; i < w.N; ++i)
    std::memcpy(z.data() + size_t(i) * w.E, w.codebook.data() + size_t(ids[i]) * w.E, sizeof(float) * w.E);
  return run_decoder(w, z, w.N, cancel);
}

Latents ShapeModel::decode_preview(const std::vector<int>& prefix, PreviewFill fill, const CancelToken* cancel) const {
  const ShapeWeights& w = *w_;
  const int k = int(prefix.size());
  if (k < 1 || k > w.N)
    throw Error("decode_preview: needs 1.." + std::to_string(w.N) + " token ids, got " + std::to_string(k));
  check_ids(w, prefix, "decode_preview");
  const int T = fill == PreviewFill::Truncate ? k : w.N;
  std::vector<float> z(size_t(T) * w.E, 0.0f);
  for (int i = 0; i < T; ++i) {
    float* r = z.data() + size_t(i) * w.E;
    if (i < k) {
      std::memcpy(r, w.codebook.data() + size_t(prefix[i]) * w.E, sizeof(float) * w.E);
      continue;
    }
    switch (fill) {
      case PreviewFill::MeanCode: std::memcpy(r, w.mean_code.data(), sizeof(float) * w.E); break;
      case PreviewFill::RepeatPrefix:
        std::memcpy(r, w.codebook.data() + size_t(prefix[i % k]) * w.E, sizeof(float) * w.E);
        break;
      case PreviewFill::ZeroCode: break;  // c_out(0) = bias
      case PreviewFill::Truncate: break;  // unreachable (T == k)
    }
  }
  return run_decoder(w, z, T, cancel);
}

std::vector<float> ShapeModel::encode_continuous(const std::vector<Vec3>& points, const std::vector<Vec3>& normals,
                                                 const CancelToken* cancel) const {
  const ShapeWeights& w = *w_;
  const size_t P = points.size();
  if (P == 0) throw Error("encode: the point cloud is empty");
  if (w.cfg.point_feats > 0 && normals.size() != P)
    throw Error("encode: " + std::to_string(P) + " points but " + std::to_string(normals.size()) + " normals");
  if (P > size_t(std::numeric_limits<int>::max() / 4)) throw Error("encode: too many points");
  for (size_t i = 0; i < P; ++i)
    for (int a = 0; a < 3; ++a)
      if (!std::isfinite(points[i][a]) || (w.cfg.point_feats > 0 && !std::isfinite(normals[i][a])))
        throw Error("encode: point " + std::to_string(i) + " has a non-finite coordinate or normal");
  const int W = w.W, Din = w.F + w.cfg.point_feats;

  // data = feat_in([embed(xyz), normal])
  std::vector<float> in(P * Din), mid(P * W), data(P * W);
  {
    const long nb = long((P + 255) / 256);
#pragma omp parallel for schedule(static)
    for (long b = 0; b < nb; ++b) {
      const size_t p0 = size_t(b) * 256, n = std::min<size_t>(256, P - p0);
      shape::fourier_embed(points[p0].data(), n, w.embed_w, w.carrier.data(), w.nf, in.data() + p0 * Din, Din);
      if (w.cfg.point_feats > 0)
        for (size_t i = 0; i < n; ++i)
          for (int a = 0; a < 3; ++a) in[(p0 + i) * Din + w.F + a] = normals[p0 + i][a];
    }
  }
  throw_if_cancelled(cancel);
  shape::linear(in.data(), P, Din, w.enc_in_w, w.enc_in_b, W, mid.data());
  cpu::silu_inplace(mid.data(), mid.size());
  shape::linear(mid.data(), P, W, w.enc_out_w, w.enc_out_b, W, data.data());
  in.clear();
  in.shrink_to_fit();
  mid.clear();
  mid.shrink_to_fit();

  const int T = w.enc_query_rows;
  std::vector<float> h(w.enc_query, w.enc_query + size_t(T) * W);
  const bool par = shape::worth_threading(T, W, int(std::max<size_t>(P, T)));
  cpu::SerialGemmScope serial(!par);
  for (const auto& L : w.enc_layers) {
    throw_if_cancelled(cancel);
    if (L.cross) {
      const std::vector<float> kv = shape::cross_attn_kv(data.data(), int(P), W, w.ln_eps, L.cross_w);
      shape::cross_attn_layer(h.data(), T, W, w.H, w.ln_eps, L.cross_w, kv.data(), int(P), par);
    } else {
      shape::self_attn_layer(h.data(), T, W, w.H, w.ln_eps, L.self, par);
    }
  }
  shape::layer_norm_rows(h.data(), T, W, w.ln_eps, w.enc_lnf_w, w.enc_lnf_b, h.data());
  const int cls = T - w.N;
  // VQ (fp32): z = RMSNorm_1e-5(c_in(h)) ⊙ norm.weight
  std::vector<float> z(size_t(w.N) * w.E);
  shape::linear(h.data() + size_t(cls) * W, w.N, W, w.c_in_w, w.c_in_b, w.E, z.data());
  cpu::rms_norm_heads(z.data(), w.N, w.E, 1, w.E, w.vq_norm_w, 1e-5f);
  return z;
}

std::vector<int> ShapeModel::encode(const std::vector<Vec3>& points, const std::vector<Vec3>& normals,
                                    const CancelToken* cancel) const {
  const ShapeWeights& w = *w_;
  const std::vector<float> z = encode_continuous(points, normals, cancel);
  // argmin_c ‖z − C_c‖² = argmin_c (‖C_c‖² − 2 z·C_c): one GEMM [N, codes], ties → lowest id.
  std::vector<float> dots(size_t(w.N) * w.codes);
  shape::gemm_nt(w.N, w.codes, w.E, 1.0f, z.data(), w.E, w.codebook.data(), w.E, 0.0f, dots.data(), w.codes);
  std::vector<int> ids(w.N);
  for (int i = 0; i < w.N; ++i) {
    const float* d = dots.data() + size_t(i) * w.codes;
    int best = 0;
    float bv = std::numeric_limits<float>::infinity();
    for (int c = 0; c < w.codes; ++c) {
      const float v = w.code_sqnorm[c] - 2.0f * d[c];
      if (v < bv) {
        bv = v;
        best = c;
      }
    }
    ids[i] = best;
  }
  return ids;
}

}  // namespace cubeforge
