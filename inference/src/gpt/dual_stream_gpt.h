// DualStreamRoformer (the Cube GPT) on the CPU in fp32: conditioning projection (text_proj + bbox token),
// prefill of cond + BOS only (spec §5: same cache, same step-0 logits), and KV-cached single-token decode.
// Both single-block decode attention modes: Reference (attends to slot 0 only, spec §4.4) and Causal.
// A GptState holds the caches and scratch of one generation, allocated once: decode allocates nothing.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/weights.h"
#include "cubeforge/generation.h"
#include "cubeforge/model_config.h"

namespace cubeforge {

struct GptState {
  int rows = 0;                            // B: 2 with guidance (cond rows then uncond rows)
  int pos = 0;                             // next shape position to decode
  std::vector<std::vector<float>> dual_k, dual_v;      // per dual block: [B, s+N+1, D]
  std::vector<std::vector<float>> single_k, single_v;  // per single block: [B, N+1, D]
  std::vector<float> x, c, h, qk, v, a, g, u, tmp, logits;  // scratch
};

class DualStreamGpt {
 public:
  // codebook: [num_codes, embed_dim] normalized codes (§2.3) used to rebuild wte rows 0..num_codes-1.
  static std::unique_ptr<DualStreamGpt> load(const GptConfig& cfg, int num_tokens, const std::string& path,
                                             const std::vector<float>& codebook);
  // Tensor names and shapes of a checkpoint for this configuration (spec §2.1).
  static TensorSpec tensor_spec(const GptConfig& cfg);

  const GptConfig& config() const { return cfg_; }
  int num_tokens() const { return n_tokens_; }
  int cond_len() const { return 77 + (cfg_.use_bbox ? 1 : 0); }
  int vocab() const { return cfg_.vocab(); }
  const WeightStore& weights() const { return w_; }
  const float* wte_row(int id) const;

  // cond[B, s, D] from CLIP last_hidden_state [B, 77, Ht] (and bbox [B, 3] for v0.5 models; nullptr = zeros).
  void make_cond(const float* last_hidden, const float* bbox, int B, float* cond) const;

  void init_state(GptState& st, int rows) const;
  // Prefill cond + BOS; logits [B, vocab] of shape position 0 land in st.logits.
  void prefill(GptState& st, const float* cond) const;
  // Feeds `token` (same for every row: the unconditional branch follows the guided token) at position st.pos;
  // logits land in st.logits.
  void decode(GptState& st, const int* tokens, AttentionMode mode) const;

 private:
  struct Lin {
    const float* w = nullptr;
    const float* b = nullptr;
  };
  struct PostW {
    Lin proj, gate, up, down;
  };
  struct DualW {  // dual block: shape stream (x) and cond stream (c); c_qk absent / c_k present in the last block
    Lin x_qk, x_v, c_qk, c_k, c_v;
    const float *xq_norm, *xk_norm, *cq_norm, *ck_norm;
    PostW post1, post2;
  };
  struct SingleW {
    Lin qk, v;
    const float *q_norm, *k_norm;
    PostW post;
  };
  void bind_weights();
  void post(GptState& st, const PostW& w, float* x, const float* a, int M) const;
  void head(GptState& st) const;

  std::vector<DualW> dual_w_;
  std::vector<SingleW> single_w_;

  GptConfig cfg_;
  int n_tokens_ = 0;
  WeightStore w_;
  std::vector<float> inv_freq_;
};

}  // namespace cubeforge
