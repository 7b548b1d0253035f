// DualStreamRoformer forward passes on the CPU (see dual_stream_gpt.h and spec §4-§5).
#include "gpt/dual_stream_gpt.h"

#include <cmath>
#include <cstring>

#include "core/cpu_ops.h"
#include "cubeforge/error.h"

namespace cubeforge {

namespace {
constexpr float kRmsEps = 1e-5f;
std::string dual(int i) { return "transformer.dual_blocks." + std::to_string(i) + "."; }
std::string single(int i) { return "transformer.single_blocks." + std::to_string(i) + "."; }

void add_linear(TensorSpec& s, const std::string& name, int64_t out, int64_t in, bool bias) {
  s[name + ".weight"] = {out, in};
  if (bias) s[name + ".bias"] = {out};
}
void add_mlp(TensorSpec& s, const std::string& p, int64_t D, bool bias) {
  add_linear(s, p + "gate_proj", 4 * D, D, bias);
  add_linear(s, p + "up_proj", 4 * D, D, bias);
  add_linear(s, p + "down_proj", D, 4 * D, bias);
}
}  // namespace

TensorSpec DualStreamGpt::tensor_spec(const GptConfig& c) {
  const int64_t D = c.n_embd, hd = c.head_dim(), V = c.vocab();
  const bool b = c.bias;
  TensorSpec s;
  add_linear(s, "text_proj", D, c.text_model_embed_dim, b);
  add_linear(s, "shape_proj", D, c.shape_model_embed_dim, true);
  if (c.use_bbox) add_linear(s, "bbox_proj", D, 3, true);
  s["transformer.wte.weight"] = {V, D};
  s["lm_head.weight"] = {V, D};
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = dual(i);
    const bool last = i == c.n_layer - 1;
    s[p + "attn.pre_x.c_qk.weight"] = {2 * D, D};
    s[p + "attn.pre_x.q_norm.weight"] = {hd};
    s[p + "attn.pre_x.k_norm.weight"] = {hd};
    add_linear(s, p + "attn.pre_x.c_v", D, D, b);
    if (last) {
      add_linear(s, p + "attn.pre_c.c_k", D, D, b);
    } else {
      s[p + "attn.pre_c.c_qk.weight"] = {2 * D, D};
      s[p + "attn.pre_c.q_norm.weight"] = {hd};
    }
    s[p + "attn.pre_c.k_norm.weight"] = {hd};
    add_linear(s, p + "attn.pre_c.c_v", D, D, b);
    for (const char* post : {"post_1.", "post_2."}) {
      if (last && std::string(post) == "post_2.") continue;
      add_linear(s, p + post + "c_proj", D, D, b);
      add_mlp(s, p + post + "mlp.", D, b);
    }
  }
  for (int i = 0; i < c.n_single_layer; ++i) {
    const std::string p = single(i);
    s[p + "attn.c_qk.weight"] = {2 * D, D};
    add_linear(s, p + "attn.c_v", D, D, b);
    add_linear(s, p + "attn.c_proj", D, D, b);
    s[p + "attn.q_norm.weight"] = {hd};
    s[p + "attn.k_norm.weight"] = {hd};
    add_mlp(s, p + "mlp.", D, b);
  }
  return s;
}

std::unique_ptr<DualStreamGpt> DualStreamGpt::load(const GptConfig& cfg, int num_tokens, const std::string& path,
                                                   const std::vector<float>& codebook) {
  auto m = std::unique_ptr<DualStreamGpt>(new DualStreamGpt());
  m->cfg_ = cfg;
  m->n_tokens_ = num_tokens;
  auto file = SafeTensors::open(path);
  m->w_ = WeightStore::load(file, tensor_spec(cfg));
  const int D = cfg.n_embd, E = cfg.shape_model_embed_dim, K = cfg.shape_model_vocab_size;
  if (codebook.size() != size_t(K) * E)
    throw Error("GPT '" + path + "': codebook has " + std::to_string(codebook.size()) + " values, expected " +
                std::to_string(size_t(K) * E) + " (shape tokenizer and GPT configs disagree)");
  // §2.3: wte[0:K] = C · shape_projᵀ + shape_proj.bias (fp32); BOS/EOS/PAD rows keep their checkpoint values.
  cpu::linear(codebook.data(), K, E, m->w_.get("shape_proj.weight"), m->w_.get("shape_proj.bias"), D,
              m->w_.mutable_tensor("transformer.wte.weight").data());
  m->bind_weights();
  const int hd = cfg.head_dim();
  m->inv_freq_.resize(hd / 2);
  for (int j = 0; j < hd / 2; ++j)
    m->inv_freq_[j] = 1.0f / std::pow(static_cast<float>(cfg.rope_theta), static_cast<float>(2 * j) / static_cast<float>(hd));
  return m;
}

void DualStreamGpt::bind_weights() {
  auto lin = [&](const std::string& n) { return Lin{w_.find(n + ".weight"), w_.find(n + ".bias")}; };
  auto postw = [&](const std::string& proj, const std::string& mlp) {
    return PostW{lin(proj), lin(mlp + "gate_proj"), lin(mlp + "up_proj"), lin(mlp + "down_proj")};
  };
  dual_w_.clear();
  for (int i = 0; i < cfg_.n_layer; ++i) {
    const std::string p = dual(i);
    DualW d;
    d.x_qk = lin(p + "attn.pre_x.c_qk");
    d.x_v = lin(p + "attn.pre_x.c_v");
    d.c_qk = lin(p + "attn.pre_c.c_qk");
    d.c_k = lin(p + "attn.pre_c.c_k");
    d.c_v = lin(p + "attn.pre_c.c_v");
    d.xq_norm = w_.find(p + "attn.pre_x.q_norm.weight");
    d.xk_norm = w_.find(p + "attn.pre_x.k_norm.weight");
    d.cq_norm = w_.find(p + "attn.pre_c.q_norm.weight");
    d.ck_norm = w_.find(p + "attn.pre_c.k_norm.weight");
    d.post1 = postw(p + "post_1.c_proj", p + "post_1.mlp.");
    d.post2 = postw(p + "post_2.c_proj", p + "post_2.mlp.");
    dual_w_.push_back(d);
  }
  single_w_.clear();
  for (int i = 0; i < cfg_.n_single_layer; ++i) {
    const std::string p = single(i);
    single_w_.push_back(SingleW{lin(p + "attn.c_qk"), lin(p + "attn.c_v"), w_.find(p + "attn.q_norm.weight"),
                                w_.find(p + "attn.k_norm.weight"), postw(p + "attn.c_proj", p + "mlp.")});
  }
}

const float* DualStreamGpt::wte_row(int id) const {
  return w_.get("transformer.wte.weight") + size_t(id) * cfg_.n_embd;
}

void DualStreamGpt::make_cond(const float* last_hidden, const float* bbox, int B, float* cond) const {
  const int D = cfg_.n_embd, Ht = cfg_.text_model_embed_dim, s = cond_len();
  const float* tb = cfg_.bias ? w_.get("text_proj.bias") : nullptr;
  for (int b = 0; b < B; ++b) {
    cpu::linear(last_hidden + size_t(b) * 77 * Ht, 77, Ht, w_.get("text_proj.weight"), tb, D, cond + size_t(b) * s * D);
    if (cfg_.use_bbox) {
      const float zero[3] = {0, 0, 0};
      cpu::linear(bbox ? bbox + 3 * b : zero, 1, 3, w_.get("bbox_proj.weight"), w_.get("bbox_proj.bias"), D,
                  cond + (size_t(b) * s + 77) * D);
    }
  }
}

void DualStreamGpt::init_state(GptState& st, int rows) const {
  const int D = cfg_.n_embd, s = cond_len(), N = n_tokens_;
  st.rows = rows;
  st.pos = 0;
  st.dual_k.assign(cfg_.n_layer, std::vector<float>(size_t(rows) * (s + N + 1) * D));
  st.dual_v = st.dual_k;
  st.single_k.assign(cfg_.n_single_layer, std::vector<float>(size_t(rows) * (N + 1) * D));
  st.single_v = st.single_k;
  const size_t M = size_t(rows) * (s + 1);  // largest row count a pass uses (prefill: cond + BOS per row)
  st.x.assign(size_t(rows) * D, 0);
  st.c.assign(size_t(rows) * s * D, 0);
  st.h.assign(M * D, 0);
  st.qk.assign(M * 2 * D, 0);
  st.v.assign(M * D, 0);
  st.a.assign(M * D, 0);
  st.g.assign(M * 4 * D, 0);
  st.u.assign(M * 4 * D, 0);
  st.tmp.assign(M * D, 0);
  st.logits.assign(size_t(rows) * cfg_.vocab(), 0);
}

// x[M,D] += c_proj(a); x += SwiGLU(LN(x)) (post_1 / post_2 of a dual block, or a single block's tail).
void DualStreamGpt::post(GptState& st, const PostW& w, float* x, const float* a, int M) const {
  const int D = cfg_.n_embd, F = 4 * D;
  cpu::linear(a, M, D, w.proj.w, w.proj.b, D, x, true);
  cpu::layer_norm(x, M, D, cfg_.eps, nullptr, nullptr, st.h.data());
  cpu::linear(st.h.data(), M, D, w.gate.w, w.gate.b, F, st.g.data());
  cpu::linear(st.h.data(), M, D, w.up.w, w.up.b, F, st.u.data());
  cpu::silu_mul(st.g.data(), st.u.data(), size_t(M) * F);
  cpu::linear(st.g.data(), M, F, w.down.w, w.down.b, D, x, true);
}

void DualStreamGpt::head(GptState& st) const {
  const int D = cfg_.n_embd, V = cfg_.vocab();
  cpu::layer_norm(st.x.data(), st.rows, D, cfg_.eps, nullptr, nullptr, st.h.data());
  cpu::linear(st.h.data(), st.rows, D, w_.get("lm_head.weight"), nullptr, V, st.logits.data());
}

void DualStreamGpt::prefill(GptState& st, const float* cond) const {
  const int D = cfg_.n_embd, s = cond_len(), N = n_tokens_, B = st.rows, nh = cfg_.n_head, hd = cfg_.head_dim();
  const int T = s + N + 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::memcpy(st.c.data(), cond, sizeof(float) * B * s * D);
  for (int b = 0; b < B; ++b) std::memcpy(st.x.data() + size_t(b) * D, wte_row(cfg_.bos_id()), sizeof(float) * D);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const DualW& w = dual_w_[l];
    const bool last = l == cfg_.n_layer - 1;
    for (int b = 0; b < B; ++b) {
      float* kc = st.dual_k[l].data() + size_t(b) * T * D;
      float* vc = st.dual_v[l].data() + size_t(b) * T * D;
      float* c = st.c.data() + size_t(b) * s * D;
      float* x = st.x.data() + size_t(b) * D;
      // Joint sequence: rows 0..s-1 cond, row s BOS. st.qk holds [s+1, 2D] = q | k per row.
      float* hc = st.h.data();
      float* hx = st.h.data() + size_t(s) * D;
      cpu::layer_norm(c, s, D, cfg_.eps, nullptr, nullptr, hc);
      cpu::layer_norm(x, 1, D, cfg_.eps, nullptr, nullptr, hx);
      float* qk = st.qk.data();
      if (last) {  // cond_pre_only: keys and values only
        cpu::linear(hc, s, D, w.c_k.w, w.c_k.b, D, st.tmp.data());
        for (int t = 0; t < s; ++t) std::memcpy(qk + size_t(t) * 2 * D + D, st.tmp.data() + size_t(t) * D, sizeof(float) * D);
      } else {
        cpu::linear(hc, s, D, w.c_qk.w, nullptr, 2 * D, qk);
        cpu::rms_norm_heads(qk, s, 2 * D, nh, hd, w.cq_norm, kRmsEps);
      }
      cpu::rms_norm_heads(qk + D, s, 2 * D, nh, hd, w.ck_norm, kRmsEps);
      cpu::linear(hc, s, D, w.c_v.w, w.c_v.b, D, st.v.data());
      float* qkx = qk + size_t(s) * 2 * D;
      cpu::linear(hx, 1, D, w.x_qk.w, nullptr, 2 * D, qkx);
      cpu::rms_norm_heads(qkx, 1, 2 * D, nh, hd, w.xq_norm, kRmsEps);
      cpu::rms_norm_heads(qkx + D, 1, 2 * D, nh, hd, w.xk_norm, kRmsEps);
      cpu::linear(hx, 1, D, w.x_v.w, w.x_v.b, D, st.v.data() + size_t(s) * D);
      // RoPE: every cond token and BOS sit at position 0, so nothing rotates. Cache slots 0..s.
      for (int t = 0; t <= s; ++t) {
        std::memcpy(kc + size_t(t) * D, qk + size_t(t) * 2 * D + D, sizeof(float) * D);
        std::memcpy(vc + size_t(t) * D, st.v.data() + size_t(t) * D, sizeof(float) * D);
      }
      // Joint causal mask: cond causal among itself, BOS sees all cond and itself.
      if (last) {
        cpu::attention(qkx, 2 * D, 1, kc, vc, D, nh, hd, scale, [s](int) { return s + 1; }, st.a.data() + size_t(s) * D, D);
      } else {
        cpu::attention(qk, 2 * D, s + 1, kc, vc, D, nh, hd, scale, [](int i) { return i + 1; }, st.a.data(), D);
        post(st, w.post2, c, st.a.data(), s);
      }
      post(st, w.post1, x, st.a.data() + size_t(s) * D, 1);
    }
  }
  for (int l = 0; l < cfg_.n_single_layer; ++l) {
    const SingleW& w = single_w_[l];
    for (int b = 0; b < B; ++b) {
      float* x = st.x.data() + size_t(b) * D;
      float* kc = st.single_k[l].data() + size_t(b) * (N + 1) * D;
      float* vc = st.single_v[l].data() + size_t(b) * (N + 1) * D;
      cpu::layer_norm(x, 1, D, cfg_.eps, nullptr, nullptr, st.h.data());
      cpu::linear(st.h.data(), 1, D, w.qk.w, nullptr, 2 * D, st.qk.data());
      cpu::rms_norm_heads(st.qk.data(), 1, 2 * D, nh, hd, w.q_norm, kRmsEps);
      cpu::rms_norm_heads(st.qk.data() + D, 1, 2 * D, nh, hd, w.k_norm, kRmsEps);
      cpu::linear(st.h.data(), 1, D, w.v.w, w.v.b, D, vc);
      std::memcpy(kc, st.qk.data() + D, sizeof(float) * D);
      cpu::attention(st.qk.data(), 2 * D, 1, kc, vc, D, nh, hd, scale, [](int) { return 1; }, st.a.data(), D);
      post(st, w.post, x, st.a.data(), 1);
    }
  }
  head(st);
  st.pos = 1;
}

void DualStreamGpt::decode(GptState& st, const int* tokens, AttentionMode mode) const {
  const int D = cfg_.n_embd, s = cond_len(), N = n_tokens_, B = st.rows, nh = cfg_.n_head, hd = cfg_.head_dim();
  const int T = s + N + 1, pos = st.pos;
  if (pos < 1 || pos > N) throw Error("GPT decode position " + std::to_string(pos) + " outside 1.." + std::to_string(N));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int b = 0; b < B; ++b) {
    if (tokens[b] < 0 || tokens[b] >= cfg_.vocab()) throw Error("GPT decode: token id out of range");
    std::memcpy(st.x.data() + size_t(b) * D, wte_row(tokens[b]), sizeof(float) * D);
  }
  // Projections run with M = B rows so every weight is read once per step for all rows.
  auto qkv = [&](const Lin& wqk, const Lin& wv, const float* qn, const float* kn) {
    cpu::layer_norm(st.x.data(), B, D, cfg_.eps, nullptr, nullptr, st.h.data());
    cpu::linear(st.h.data(), B, D, wqk.w, nullptr, 2 * D, st.qk.data());
    cpu::linear(st.h.data(), B, D, wv.w, wv.b, D, st.v.data());
    cpu::rms_norm_heads(st.qk.data(), B, 2 * D, nh, hd, qn, kRmsEps);
    cpu::rms_norm_heads(st.qk.data() + D, B, 2 * D, nh, hd, kn, kRmsEps);
  };
  // Rotates q/k of row b at `pos`, writes k/v into cache slot `slot`, attends to the first `visible` slots.
  auto attend = [&](int b, float* kc, float* vc, int slot, int visible) {
    float* q = st.qk.data() + size_t(b) * 2 * D;
    cpu::rope_row(q, nh, hd, pos, inv_freq_.data());
    cpu::rope_row(q + D, nh, hd, pos, inv_freq_.data());
    std::memcpy(kc + size_t(slot) * D, q + D, sizeof(float) * D);  // caches hold rotated keys (§4.3)
    std::memcpy(vc + size_t(slot) * D, st.v.data() + size_t(b) * D, sizeof(float) * D);
    cpu::attention(q, 2 * D, 1, kc, vc, D, nh, hd, scale, [visible](int) { return visible; },
                   st.a.data() + size_t(b) * D, D);
  };
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const DualW& w = dual_w_[l];
    qkv(w.x_qk, w.x_v, w.xq_norm, w.xk_norm);
    for (int b = 0; b < B; ++b)
      attend(b, st.dual_k[l].data() + size_t(b) * T * D, st.dual_v[l].data() + size_t(b) * T * D, s + pos, s + pos + 1);
    post(st, w.post1, st.x.data(), st.a.data(), B);
  }
  const int single_visible = mode == AttentionMode::Reference ? 1 : pos + 1;
  for (int l = 0; l < cfg_.n_single_layer; ++l) {
    const SingleW& w = single_w_[l];
    qkv(w.qk, w.v, w.q_norm, w.k_norm);
    for (int b = 0; b < B; ++b)
      attend(b, st.single_k[l].data() + size_t(b) * (N + 1) * D, st.single_v[l].data() + size_t(b) * (N + 1) * D, pos,
             single_visible);
    post(st, w.post, st.x.data(), st.a.data(), B);
  }
  head(st);
  st.pos = pos + 1;
}

}  // namespace cubeforge
