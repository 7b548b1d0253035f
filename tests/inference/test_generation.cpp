// Generation API: goldens through the library, streaming, determinism, top-p, cancellation, previews and
// every bad request / bad model file the API must reject with a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/golden.h"
#include "cubeforge/shape_model.h"
#include "cubeforge/test_model.h"
#include "test_util.h"
#include "tiny_model_fixture.h"

using namespace cubeforge;
namespace fs = std::filesystem;

namespace {

using cftest::error_of;

// One tiny random-weight model with the real CLIP vocabulary, shared by the tests of this file.
class GenerationTest : public cftest::TinyModelFixture<GenerationTest, 3> {};

TEST(Golden, EveryTensorMatchesReference) {
  for (const char* name : {"tiny_v01", "tiny_v05"}) {
    auto r = run_golden(cftest::golden_dir(), name);
    EXPECT_TRUE(r.tokens_match) << name;
    for (const auto& l : r.lines) EXPECT_TRUE(l.ok) << name << " " << l.tensor << " rel_err=" << l.rel_err << " " << l.note;
    EXPECT_LT(r.max_rel_err, kGoldenTolerance) << name;
    EXPECT_GE(r.lines.size(), 11u) << name;  // CLIP, cond, BOS, step logits, tokens, full forward, 4 shape tensors
    EXPECT_TRUE(r.ok()) << name;
  }
}

TEST(Golden, MissingCaseFilesAreReported) {
  auto msg = error_of([] { run_golden(cftest::golden_dir(), "no_such_case"); });
  EXPECT_NE(msg.find("no_such_case_config.json"), std::string::npos) << msg;
}

TEST_F(GenerationTest, StreamsEveryTokenInOrder) {
  GenerationRequest req;
  req.prompt = "a small wooden chair";
  std::vector<TokenEvent> events;
  auto res = model_->generate_tokens(req, [&](const TokenEvent& e) { events.push_back(e); });
  const int N = model_->config().num_tokens();
  ASSERT_EQ(int(res.tokens.size()), N);
  ASSERT_EQ(int(events.size()), N);
  for (int i = 0; i < N; ++i) {
    EXPECT_EQ(events[i].index, i);
    EXPECT_EQ(events[i].id, res.tokens[i]);
    EXPECT_GE(events[i].id, 0);
    EXPECT_LT(events[i].id, model_->config().shape.num_codes);
    if (i) EXPECT_GE(events[i].elapsed_ms, events[i - 1].elapsed_ms);
  }
  EXPECT_GT(res.stats.ttft_ms, 0);
  EXPECT_GE(res.stats.gpt_ms, res.stats.prefill_ms);
  EXPECT_EQ(res.stats.token_ms.size(), size_t(N));
}

TEST_F(GenerationTest, GreedyIsDeterministicAndPromptsMatter) {
  GenerationRequest a;
  a.prompt = "a tall lamp";
  auto r1 = model_->generate_tokens(a);
  auto r2 = model_->generate_tokens(a);
  EXPECT_EQ(r1.tokens, r2.tokens);
  GenerationRequest b = a;
  b.prompt = "a round table with four legs";
  EXPECT_NE(model_->generate_tokens(b).tokens, r1.tokens);
}

TEST_F(GenerationTest, TopPSeedsAreReproducibleAndDiffer) {
  GenerationRequest req;
  req.prompt = "a red car";
  req.top_p = 0.95f;
  req.seed = 11;
  auto a = model_->generate_tokens(req).tokens;
  EXPECT_EQ(model_->generate_tokens(req).tokens, a);
  req.seed = 12;
  EXPECT_NE(model_->generate_tokens(req).tokens, a);
  // A tiny p keeps only the most likely token: identical to greedy, whatever the seed.
  GenerationRequest g;
  g.prompt = req.prompt;
  auto greedy = model_->generate_tokens(g).tokens;
  req.top_p = 1e-6f;
  req.seed = 99;
  EXPECT_EQ(model_->generate_tokens(req).tokens, greedy);
}

TEST_F(GenerationTest, CancelStopsWithinOneStep) {
  GenerationRequest req;
  req.prompt = "a boat";
  CancelToken cancel;
  int seen = 0;
  auto msg = error_of([&] {
    model_->generate_tokens(req, [&](const TokenEvent& e) {
      ++seen;
      if (e.index == 4) cancel.cancel();
    }, &cancel);
  });
  EXPECT_EQ(msg, "cancelled");
  EXPECT_EQ(seen, 5);  // no further token after the one during which cancel was requested
  // The model is reusable after a cancellation.
  EXPECT_EQ(int(model_->generate_tokens(req).tokens.size()), model_->config().num_tokens());
}

TEST_F(GenerationTest, CancelBeforeStart) {
  GenerationRequest req;
  req.prompt = "a boat";
  CancelToken cancel;
  cancel.cancel();
  int seen = 0;
  EXPECT_EQ(error_of([&] { model_->generate_tokens(req, [&](const TokenEvent&) { ++seen; }, &cancel); }), "cancelled");
  EXPECT_EQ(seen, 0);
}

TEST_F(GenerationTest, AttentionModesDifferAfterStepZero) {
  // Same teacher-forced inputs: step-0 logits agree (prefill), later steps differ because the reference mode's
  // single block attends to slot 0 only (spec §4.4) while causal mode attends to the whole prefix.
  std::vector<int64_t> ids(77, 49407), mask(77, 0);
  ids[0] = 49406;
  mask[0] = mask[1] = 1;
  std::vector<float> hidden;
  model_->encode_text(ids, mask, 1, hidden);
  auto cond = model_->make_cond(hidden, {}, 1);
  std::vector<int> teacher(model_->config().num_tokens());
  for (size_t i = 0; i < teacher.size(); ++i) teacher[i] = int(i * 7 % 100);
  std::vector<std::vector<float>> ref, causal;
  model_->run_gpt(cond, 1, 0, std::nullopt, 0, AttentionMode::Reference, &teacher, &ref, {}, nullptr, nullptr);
  model_->run_gpt(cond, 1, 0, std::nullopt, 0, AttentionMode::Causal, &teacher, &causal, {}, nullptr, nullptr);
  EXPECT_EQ(ref[0], causal[0]);
  EXPECT_GT(relative_l2(ref[3].data(), causal[3].data(), ref[3].size()), 1e-4);
}

TEST_F(GenerationTest, BadRequestsAreRejected) {
  const auto& cfg = model_->config();
  GenerationRequest ok;
  ok.prompt = "a chair";
  EXPECT_NO_THROW(validate_request(ok, cfg));
  auto with = [&](auto mutate) {
    GenerationRequest r = ok;
    mutate(r);
    return error_of([&] { validate_request(r, cfg); });
  };
  EXPECT_NE(with([](auto& r) { r.prompt = "   "; }).find("empty"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.top_p = 0.0f; }).find("top_p"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.top_p = 1.5f; }).find("top_p"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.guidance = NAN; }).find("guidance"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.guidance = -1; }).find("guidance"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.bbox = std::array<float, 3>{1, 0, 1}; }).find("positive"), std::string::npos);
  EXPECT_NE(with([](auto& r) { r.bbox = std::array<float, 3>{1, NAN, 1}; }).find("positive"), std::string::npos);
  EXPECT_NO_THROW(with([](auto& r) { r.bbox = std::array<float, 3>{1, 2, 1}; }));
  // A negative prompt replaces the unconditional branch, so it needs guidance; a blank one is no negative prompt.
  EXPECT_NE(with([](auto& r) {
              r.negative_prompt = "a table";
              r.guidance = 0;
            }).find("negative prompt needs guidance"),
            std::string::npos);
  EXPECT_NO_THROW(with([](auto& r) {
    r.negative_prompt = "  ";
    r.guidance = 0;
  }));
  EXPECT_NO_THROW(with([](auto& r) { r.negative_prompt = "a table"; }));
  // A v0.1-layout model takes no bounding box.
  ModelConfig v01 = cfg;
  v01.gpt.use_bbox = false;
  GenerationRequest b = ok;
  b.bbox = std::array<float, 3>{1, 1, 1};
  EXPECT_NE(error_of([&] { validate_request(b, v01); }).find("does not take a bounding box"), std::string::npos);
  // generate_tokens validates too.
  GenerationRequest e;
  EXPECT_NE(error_of([&] { model_->generate_tokens(e); }).find("empty"), std::string::npos);
}

// The negative prompt is encoded in the unconditional branch's place: an empty or blank one leaves the reference's
// empty-string branch (the same tokens), a real one changes the guided tokens; a long one is reported as truncated.
TEST_F(GenerationTest, NegativePromptReplacesTheUnconditionalBranch) {
  GenerationRequest a;
  a.prompt = "a tall lamp";
  const auto base = model_->generate_tokens(a);
  EXPECT_FALSE(base.stats.negative_prompt_truncated);
  GenerationRequest blank = a;
  blank.negative_prompt = " \t ";
  EXPECT_EQ(model_->generate_tokens(blank).tokens, base.tokens);
  GenerationRequest neg = a;
  neg.negative_prompt = "a round table with four legs";
  const auto with_neg = model_->generate_tokens(neg);
  EXPECT_NE(with_neg.tokens, base.tokens);
  EXPECT_EQ(model_->generate_tokens(neg).tokens, with_neg.tokens);  // deterministic
  EXPECT_FALSE(with_neg.stats.negative_prompt_truncated);
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "chair ";
  neg.negative_prompt = long_text;
  EXPECT_TRUE(model_->generate_tokens(neg).stats.negative_prompt_truncated);
  // The default prompt's branch is still the cached empty string after a negative prompt was used, and going back
  // to the first negative prompt (its states cached or not) gives its tokens again.
  EXPECT_EQ(model_->generate_tokens(a).tokens, base.tokens);
  neg.negative_prompt = "a round table with four legs";
  const auto again = model_->generate_tokens(neg);
  EXPECT_EQ(again.tokens, with_neg.tokens);
  EXPECT_FALSE(again.stats.negative_prompt_truncated);
  EXPECT_EQ(model_->generate_tokens(neg).tokens, with_neg.tokens);
}

TEST_F(GenerationTest, BoundingBoxConditionsTheLogits) {
  // The bbox token is cond index 77: it changes the conditioning and therefore the first step's logits.
  std::vector<int64_t> ids(77, 49407), mask(77, 0);
  ids[0] = 49406;
  ids[1] = 320;
  mask[0] = mask[1] = mask[2] = 1;
  std::vector<float> hidden;
  model_->encode_text(ids, mask, 1, hidden);
  auto plain = model_->make_cond(hidden, {}, 1);
  auto boxed = model_->make_cond(hidden, {0.5f, 1.925f, 0.5f}, 1);
  const size_t D = size_t(model_->config().gpt.n_embd);
  ASSERT_EQ(plain.size(), 78 * D);
  for (size_t i = 0; i < 77 * D; ++i) ASSERT_EQ(plain[i], boxed[i]);  // text tokens untouched
  double diff = 0;
  for (size_t i = 77 * D; i < 78 * D; ++i) diff += std::abs(plain[i] - boxed[i]);
  EXPECT_GT(diff, 1e-3);
  std::vector<std::vector<float>> s1, s2;
  model_->run_gpt(plain, 1, 0, std::nullopt, 0, AttentionMode::Reference, nullptr, &s1, {}, nullptr, nullptr);
  model_->run_gpt(boxed, 1, 0, std::nullopt, 0, AttentionMode::Reference, nullptr, &s2, {}, nullptr, nullptr);
  EXPECT_GT(relative_l2(s1[0].data(), s2[0].data(), s1[0].size()), 1e-4);
}

TEST_F(GenerationTest, PromptTruncationIsReported) {
  GenerationRequest req;
  req.prompt = "";
  for (int i = 0; i < 90; ++i) req.prompt += "chair ";
  EXPECT_TRUE(model_->generate_tokens(req).stats.prompt_truncated);
  req.prompt = "chair";
  EXPECT_FALSE(model_->generate_tokens(req).stats.prompt_truncated);
}

TEST_F(GenerationTest, MeshAndPreviewsArriveBeforeCompletion) {
  GenerationRequest req;
  req.prompt = "a barrel";
  const MeshOptions mo = cftest::coarse_mesh();
  const PreviewOptions po = cftest::preview_every_8();
  std::vector<int> preview_at;
  int tokens_seen = 0;
  auto res = model_->generate(req, mo, [&](const TokenEvent&) { ++tokens_seen; },
                              [&](int k, const Mesh&) { preview_at.push_back(k); }, po);
  const int N = model_->config().num_tokens();
  EXPECT_EQ(preview_at, (std::vector<int>{8, 16, 24}));
  EXPECT_EQ(tokens_seen, N);
  EXPECT_EQ(res.stats.previews, 3);
  EXPECT_GT(res.stats.first_preview_ms, 0);
  EXPECT_EQ(res.stats.points_dense, size_t(17 * 17 * 17));
  EXPECT_GT(res.stats.total_ms, 0);
}

// The adaptive preview interval keeps preview time within max_overhead of the decode time: an 8 ms preview at
// 0.89 ms per token and 10% needs 90 tokens (the GPU v0.5 case); a cheap preview keeps `every`.
TEST(PreviewInterval, GrowsToKeepPreviewsWithinTheOverheadBudget) {
  PreviewOptions po;
  po.every = 16;
  po.max_overhead = 0.10f;
  EXPECT_EQ(next_preview_interval(po, 16, 8.0, 0.89), 90);
  EXPECT_EQ(next_preview_interval(po, 90, 0.5, 0.89), 16);   // cheap preview: back to every
  EXPECT_EQ(next_preview_interval(po, 40, 8.0, 0.0), 40);    // no step time yet: unchanged
  po.max_overhead = 0.05f;
  EXPECT_EQ(next_preview_interval(po, 16, 8.0, 0.89), 180);
  po.adaptive = false;
  EXPECT_EQ(next_preview_interval(po, 16, 8.0, 0.89), 16);
}

TEST_F(GenerationTest, TokensToMeshPassesTheAdaptiveRuleOptions) {
  MeshOptions mo;
  mo.resolution_base = 6;
  mo.coarse_resolution_base = 4;
  const int N = model_->config().num_tokens();
  std::vector<int> ids(N);
  for (int i = 0; i < N; ++i) ids[i] = (i * 11 + 3) % model_->config().shape.num_codes;
  // A margin that refines part of the random model's field (its logits lie within a few tenths of 0 here).
  GridValues coarse = model_->shape_model().occupancy(model_->shape_model().decode_tokens(ids))->grid_dense(4);
  std::vector<float> mag;
  for (float v : coarse.values) mag.push_back(std::fabs(v));
  std::nth_element(mag.begin(), mag.begin() + mag.size() / 2, mag.end());
  mo.adaptive_margin = mag[mag.size() / 2];  // the median |logit| of the coarse level
  GenerationStats fixed, scaled;
  mo.adaptive_scale_margin = false;  // the former rule: same margin at every level, dilation 1
  mo.adaptive_final_dilation = -1;
  model_->tokens_to_mesh(ids, mo, nullptr, &fixed);
  mo.adaptive_scale_margin = true;
  mo.adaptive_final_dilation = 0;
  model_->tokens_to_mesh(ids, mo, nullptr, &scaled);
  EXPECT_GT(fixed.points_evaluated, size_t(17 * 17 * 17));  // refined beyond the coarse level
  EXPECT_LT(scaled.points_evaluated, fixed.points_evaluated);
}

TEST_F(GenerationTest, TokensToMeshRejectsBadInput) {
  MeshOptions mo;
  mo.resolution_base = 4;
  const int N = model_->config().num_tokens();
  std::vector<int> ok(N, 1);
  EXPECT_NO_THROW(model_->tokens_to_mesh(ok, mo));
  EXPECT_NE(error_of([&] { model_->tokens_to_mesh(std::vector<int>(N - 1, 1), mo); }), "");
  auto bad = ok;
  bad[3] = model_->config().shape.num_codes;
  EXPECT_NE(error_of([&] { model_->tokens_to_mesh(bad, mo); }), "");
  mo.resolution_base = 10;
  EXPECT_NE(error_of([&] { model_->tokens_to_mesh(ok, mo); }), "");
  mo.resolution_base = 3;
  EXPECT_NE(error_of([&] { model_->tokens_to_mesh(ok, mo); }), "");
}

// The shape-stage backend hook (the GPU engine in CUDA builds): used when attached, CPU fall-back on any failure.
class FakeShapeBackend : public ShapeBackend {
 public:
  enum Mode { Triangle, Fail, Cancel } mode = Triangle;
  int calls = 0;
  AdaptiveOptions last_preview_grid;
  std::string name() const override { return "fake-gpu"; }
  Mesh tokens_to_mesh(const std::vector<int>&, const MeshOptions&, const CancelToken*, GenerationStats* st) override {
    ++calls;
    if (mode == Fail) throw Error("device lost");
    if (mode == Cancel) throw Cancelled();
    st->points_evaluated = 7;
    return triangle();
  }
  Mesh preview_mesh(const std::vector<int>&, int, const AdaptiveOptions& ao, const CancelToken*) override {
    ++calls;
    last_preview_grid = ao;
    if (mode == Fail) throw Error("device lost");
    return triangle();
  }
  static Mesh triangle() {
    Mesh m;
    m.positions = {{0, 0, 0}, {0.5f, 0, 0}, {0, 0.5f, 0}};
    m.triangles = {{0, 1, 2}};
    return m;
  }
};

TEST_F(GenerationTest, ShapeBackendIsUsedAndFailuresFallBackToCpu) {
  MeshOptions mo;
  mo.resolution_base = 5;
  const int N = model_->config().num_tokens();
  std::vector<int> ids(N);
  for (int i = 0; i < N; ++i) ids[i] = (i * 37) % model_->config().shape.num_codes;
  GenerationStats cpu_st;
  const Mesh cpu = model_->tokens_to_mesh(ids, mo, nullptr, &cpu_st);
  const Mesh cpu_preview = model_->preview_mesh(std::vector<int>(ids.begin(), ids.begin() + 5), 5);
  EXPECT_EQ(cpu_st.shape_backend, "cpu");
  EXPECT_EQ(model_->shape_backend_name(), "cpu");

  auto owned = std::make_unique<FakeShapeBackend>();
  FakeShapeBackend* fake = owned.get();
  model_->set_shape_backend(std::move(owned));
  EXPECT_EQ(model_->shape_backend_name(), "fake-gpu");
  GenerationStats st;
  Mesh m = model_->tokens_to_mesh(ids, mo, nullptr, &st);
  EXPECT_EQ(m.face_count(), 1u);
  EXPECT_EQ(st.shape_backend, "fake-gpu");
  EXPECT_EQ(st.points_evaluated, 7u);
  EXPECT_EQ(model_->preview_mesh(std::vector<int>(ids.begin(), ids.begin() + 5), 5).face_count(), 1u);
  EXPECT_EQ(fake->last_preview_grid.coarse_rb, 4);  // the CPU preview's grid rule is handed over
  EXPECT_FLOAT_EQ(fake->last_preview_grid.margin, 0.5f);

  fake->mode = FakeShapeBackend::Fail;
  GenerationStats fst;
  m = model_->tokens_to_mesh(ids, mo, nullptr, &fst);
  EXPECT_EQ(m.positions, cpu.positions);
  EXPECT_EQ(m.triangles, cpu.triangles);
  EXPECT_EQ(fst.shape_backend.rfind("cpu (GPU failed: device lost", 0), 0u) << fst.shape_backend;
  EXPECT_EQ(fst.points_evaluated, cpu_st.points_evaluated);
  const Mesh p = model_->preview_mesh(std::vector<int>(ids.begin(), ids.begin() + 5), 5);
  EXPECT_EQ(p.positions, cpu_preview.positions);
  EXPECT_EQ(p.triangles, cpu_preview.triangles);

  fake->mode = FakeShapeBackend::Cancel;  // cancellation is not a failure: no CPU rerun
  EXPECT_THROW(model_->tokens_to_mesh(ids, mo), Cancelled);
  EXPECT_EQ(fake->calls, 5);

  model_->set_token_backend(nullptr);  // the CPU token loop drops the GPU shape stage too
  EXPECT_EQ(model_->shape_backend_name(), "cpu");
}

// MeshOptions::normals off: the same surface without normals (the editor computes them after decimating). Through
// the GPU stand-in, whose triangle survives the clean-up (the tiny model's shapes may be empty).
TEST_F(GenerationTest, TokensToMeshCanLeaveNormalsOut) {
  model_->set_shape_backend(std::make_unique<FakeShapeBackend>());
  MeshOptions mo;
  mo.resolution_base = 5;
  const std::vector<int> ids(model_->config().num_tokens(), 1);
  const Mesh with = model_->tokens_to_mesh(ids, mo);
  mo.normals = false;
  const Mesh without = model_->tokens_to_mesh(ids, mo);
  model_->set_shape_backend(nullptr);
  ASSERT_EQ(with.face_count(), 1u);
  EXPECT_EQ(with.normals.size(), with.vertex_count());
  EXPECT_TRUE(without.normals.empty());
  EXPECT_EQ(without.positions, with.positions);
  EXPECT_EQ(without.triangles, with.triangles);
}

// The text-tower backend hook (the CUDA text encoder in CUDA builds): used when attached, CPU fall-back on failure.
class FakeTextBackend : public TextBackend {
 public:
  bool fail = false;
  int calls = 0;
  size_t width = 0;
  std::string name() const override { return "fake-gpu-text"; }
  void encode(const std::vector<int64_t>&, const std::vector<int64_t>&, int B, std::vector<float>& h) override {
    ++calls;
    if (fail) throw Error("device lost");
    h.assign(size_t(B) * 77 * width, 0.25f);
  }
};

TEST_F(GenerationTest, TextBackendIsUsedAndFailuresFallBackToCpu) {
  GenerationRequest req;
  req.prompt = "a small red chair";
  const auto cpu = model_->generate_tokens(req);  // also caches CLIP("") from the CPU path
  EXPECT_EQ(cpu.stats.text_backend, "cpu");
  std::vector<int64_t> ids(77, 49407), mask(77, 0);
  ids[0] = 49406;
  mask[0] = mask[1] = 1;
  std::vector<float> cpu_h, h;
  std::string used;
  model_->encode_text(ids, mask, 1, cpu_h, nullptr, &used);
  EXPECT_EQ(used, "cpu");
  ASSERT_EQ(cpu_h.size() % 77, 0u);

  auto owned = std::make_unique<FakeTextBackend>();
  FakeTextBackend* fake = owned.get();
  fake->width = cpu_h.size() / 77;
  model_->set_text_backend(std::move(owned));
  EXPECT_EQ(model_->text_backend_name(), "fake-gpu-text");
  model_->encode_text(ids, mask, 1, h, nullptr, &used);
  EXPECT_EQ(used, "fake-gpu-text");
  EXPECT_EQ(h, std::vector<float>(cpu_h.size(), 0.25f));
  const auto gpu = model_->generate_tokens(req);
  EXPECT_EQ(gpu.stats.text_backend, "fake-gpu-text");
  EXPECT_EQ(fake->calls, 2);
  std::vector<float> embeds;  // the pooled projection exists on the CPU path only
  model_->encode_text(ids, mask, 1, h, &embeds, &used);
  EXPECT_EQ(used, "cpu");
  EXPECT_EQ(h, cpu_h);

  fake->fail = true;
  model_->encode_text(ids, mask, 1, h, nullptr, &used);
  EXPECT_EQ(h, cpu_h);
  EXPECT_EQ(used.rfind("cpu (GPU failed: device lost", 0), 0u) << used;
  const auto after = model_->generate_tokens(req);
  EXPECT_EQ(after.tokens, cpu.tokens);
  EXPECT_EQ(after.stats.text_backend.rfind("cpu (GPU failed", 0), 0u) << after.stats.text_backend;

  model_->set_token_backend(nullptr);  // the CPU token loop drops the GPU text tower too
  EXPECT_EQ(model_->text_backend_name(), "cpu");
}

TEST(ModelFilesTest, MissingAndCorruptFilesAreNamed) {
  auto dir = cftest::temp_dir("badmodel");
  EXPECT_NE(error_of([&] { ModelFiles::from_directory((dir / "nope").string()); }).find("does not exist"), std::string::npos);
  EXPECT_NE(error_of([&] { ModelFiles::from_directory(dir.string()); }).find("no config"), std::string::npos);
  write_random_model(dir.string(), test_model_preset("tiny"), cftest::shared_dir() + "/data/clip-tokenizer", 5);
  fs::remove(dir / "shape_tokenizer.safetensors");
  EXPECT_NE(error_of([&] { ModelFiles::from_directory(dir.string()); }).find("shape_tokenizer.safetensors"), std::string::npos);
  // Corrupt GPT checkpoint: truncated in the middle of the data.
  write_random_model(dir.string(), test_model_preset("tiny"), cftest::shared_dir() + "/data/clip-tokenizer", 5);
  fs::resize_file(dir / "shape_gpt.safetensors", fs::file_size(dir / "shape_gpt.safetensors") / 2);
  auto msg = error_of([&] { Cube3D::load(ModelFiles::from_directory(dir.string())); });
  EXPECT_NE(msg.find("shape_gpt.safetensors"), std::string::npos) << msg;
  // Checkpoint from another configuration: shapes do not match the config.
  write_random_model(dir.string(), test_model_preset("tiny"), cftest::shared_dir() + "/data/clip-tokenizer", 5);
  auto other = test_model_preset("tiny");
  other.gpt.n_embd = 128;
  std::ofstream(dir / "config.yaml") << model_config_yaml(other);
  msg = error_of([&] { Cube3D::load(ModelFiles::from_directory(dir.string())); });
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(ModelConfigTest, ValidatesWithClearMessages) {
  auto dir = cftest::temp_dir("cfg");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  auto base = test_model_preset("tiny");
  EXPECT_NO_THROW(load_model_config(write("ok.yaml", model_config_yaml(base))));
  auto bad = base;
  bad.gpt.n_head = 5;
  auto msg = error_of([&] { load_model_config(write("heads.yaml", model_config_yaml(bad))); });
  EXPECT_NE(msg.find("divisible by n_head"), std::string::npos) << msg;
  msg = error_of([&] { load_model_config(write("unknown.yaml", model_config_yaml(base) + "gpt_model_extra: 1\n")); });
  EXPECT_EQ(msg, "");  // unknown top-level keys are tolerated
  std::string y = model_config_yaml(base);
  y.insert(y.find("gpt_model:\n") + 11, "  n_lyer: 3\n");
  msg = error_of([&] { load_model_config(write("typo.yaml", y)); });
  EXPECT_NE(msg.find("unknown key 'n_lyer'"), std::string::npos) << msg;
  msg = error_of([&] { load_model_config(write("broken.json", "{\"gpt_model\": ")); });
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  msg = error_of([&] { load_model_config(write("broken.yaml", "gpt_model: [1, 2\n")); });
  EXPECT_NE(msg.find("malformed YAML"), std::string::npos) << msg;
  msg = error_of([&] { load_model_config((dir / "missing.yaml").string()); });
  EXPECT_NE(msg.find("missing.yaml"), std::string::npos) << msg;
  // The reference v0.1 and v0.5 key sets load (golden JSON configs carry the same keys).
  EXPECT_FALSE(load_model_config(cftest::golden_dir() + "/tiny_v01_config.json").gpt.use_bbox);
  EXPECT_TRUE(load_model_config(cftest::golden_dir() + "/tiny_v05_config.json").gpt.use_bbox);
  fs::remove_all(dir);
}

}  // namespace

TEST_F(GenerationTest, WarmUpLeavesLaterGenerationsUnchangedAndHonoursCancel) {
  GenerationRequest req;
  req.prompt = "a tall wooden table";
  MeshOptions mo;
  mo.resolution_base = 5;
  const auto cold = model_->generate(req, mo);
  auto fresh = Cube3D::load(ModelFiles::from_directory(dir_->string()));
  CancelToken cancelled;
  cancelled.cancel();
  EXPECT_THROW(fresh->warm_up(&cancelled), Cancelled);
  EXPECT_GT(fresh->warm_up(), 0.0);
  const auto warm = fresh->generate(req, mo);
  EXPECT_EQ(warm.tokens, cold.tokens);
  EXPECT_EQ(warm.mesh.positions, cold.mesh.positions);
  EXPECT_EQ(warm.mesh.triangles, cold.mesh.triangles);
}
