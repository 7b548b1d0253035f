// Golden runner (see include/cubeforge/golden.h): CLIP, conditioning, GPT step logits (cached path, guidance),
// greedy tokens, the uncached full forward (teacher-forced causal mode), and the shape-stage tensors.
#include "cubeforge/golden.h"

#include <cmath>
#include <filesystem>

#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/safetensors.h"
#include "gpt/dual_stream_gpt.h"
#include "pipeline/shape_golden.h"

namespace fs = std::filesystem;

namespace cubeforge {

double relative_l2(const float* out, const float* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(out[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * ref[i];
  }
  if (!std::isfinite(num)) return INFINITY;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

bool GoldenReport::ok() const {
  if (!tokens_match) return false;
  for (const auto& l : lines)
    if (!l.ok) return false;
  return true;
}

namespace {
void add_float(GoldenReport& r, const std::string& name, const std::vector<float>& out, const std::vector<float>& ref) {
  GoldenLine l;
  l.tensor = name;
  if (out.size() != ref.size()) {
    l.rel_err = INFINITY;
    l.note = "size " + std::to_string(out.size()) + " vs reference " + std::to_string(ref.size());
  } else {
    l.rel_err = relative_l2(out.data(), ref.data(), out.size());
  }
  l.ok = l.rel_err < kGoldenTolerance;
  r.max_rel_err = std::max(r.max_rel_err, l.rel_err);
  r.lines.push_back(l);
}
}  // namespace

void add_golden_float(GoldenReport& r, const std::string& name, const std::vector<float>& out, const std::vector<float>& ref) {
  add_float(r, name, out, ref);
}

void add_golden_ids(GoldenReport& r, const std::string& name, const std::vector<int64_t>& out, const std::vector<int64_t>& ref) {
  GoldenLine l;
  l.tensor = name;
  size_t first = out.size() == ref.size() ? out.size() : 0;
  for (size_t i = 0; i < std::min(out.size(), ref.size()); ++i)
    if (out[i] != ref[i]) {
      first = i;
      break;
    }
  l.ok = out.size() == ref.size() && first == out.size();
  l.note = l.ok ? "match" : "first mismatch at " + std::to_string(first);
  r.lines.push_back(l);
}

GoldenReport run_golden(const std::string& dir, const std::string& name) {
  const auto base = fs::path(dir) / name;
  auto p = [&](const std::string& suffix) { return base.string() + suffix; };
  for (const char* s : {"_config.json", "_gpt.safetensors", "_shape.safetensors", "_clip.safetensors", "_io.safetensors"})
    if (!fs::exists(p(s))) throw Error("golden case '" + name + "' in '" + dir + "': missing " + name + s);
  auto model = Cube3D::load(ModelFiles::from_golden_case(base.string()));
  const auto& cfg = model->config();
  auto io = SafeTensors::open(p("_io.safetensors"));
  GoldenReport r;
  r.name = name;
  const int B = 2, N = cfg.num_tokens(), K = cfg.shape.num_codes;

  auto ids = io.to_i64("clip_input_ids", {B, 77});
  auto mask = io.to_i64("clip_attention_mask", {B, 77});
  std::vector<float> hidden, embeds;
  model->encode_text(ids, mask, B, hidden, &embeds);
  add_float(r, "clip_last_hidden_state", hidden, io.to_f32("clip_last_hidden_state"));
  if (io.contains("clip_text_embeds")) add_float(r, "clip_text_embeds", embeds, io.to_f32("clip_text_embeds"));

  std::vector<float> bbox;
  if (cfg.gpt.use_bbox && cfg.bounding_box_xyz.size() == 3) {
    bbox = cfg.bounding_box_xyz;
    bbox.resize(6, 0.0f);  // the golden cases' bbox tail: three zeros
  }
  auto cond = model->make_cond(hidden, bbox, B);
  add_float(r, "cond", cond, io.to_f32("cond"));
  auto bos = model->bos_embedding();
  std::vector<float> bos2 = bos;
  bos2.insert(bos2.end(), bos.begin(), bos.end());
  add_float(r, "bos_embed", bos2, io.to_f32("bos_embed"));

  // Cached path with guidance: step logits (cond, uncond, guided) and greedy tokens.
  std::vector<std::vector<float>> steps;
  auto tokens = model->run_gpt(cond, B, cfg.guidance_scale, std::nullopt, 0, AttentionMode::Reference, nullptr, &steps, {},
                               nullptr, nullptr);
  std::vector<float> flat;
  for (const auto& s : steps) flat.insert(flat.end(), s.begin(), s.end());
  add_float(r, "step_logits_cond_uncond_guided", flat, io.to_f32("step_logits_cond_uncond_guided", {N, 3, K}));
  auto ref_tokens = io.to_i64("token_ids", {1, N});
  std::vector<int64_t> got(tokens.begin(), tokens.end());
  add_golden_ids(r, "token_ids", got, ref_tokens);
  r.tokens_match = r.lines.back().ok;

  // Uncached full forward over [BOS, t_0..t_{N-2}] = teacher-forced decode with true causal single blocks.
  if (io.contains("full_forward_logits")) {
    std::vector<int> teacher(ref_tokens.begin(), ref_tokens.end());
    std::vector<std::vector<float>> fsteps;
    model->run_gpt(cond, B, cfg.guidance_scale, std::nullopt, 0, AttentionMode::Causal, &teacher, &fsteps, {}, nullptr,
                   nullptr);
    // reference layout [2, N, V]: row-major over (row, step); we only produce the K shape-code columns per row.
    auto ref = io.to_f32("full_forward_logits");
    const auto& shp = io.info("full_forward_logits").shape;
    const int V = int(shp.back());
    std::vector<float> out, refk;
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < N; ++i) {
        out.insert(out.end(), fsteps[i].begin() + size_t(b) * K, fsteps[i].begin() + size_t(b + 1) * K);
        refk.insert(refk.end(), ref.begin() + (size_t(b) * N + i) * V, ref.begin() + (size_t(b) * N + i) * V + K);
      }
    add_float(r, "full_forward_logits", out, refk);
  }
  check_shape_golden(r, dir, name, cfg, io, tokens);
  return r;
}

}  // namespace cubeforge
