// Variations of one prompt (GenerationRequest::variations, Cube3D::generate_token_variations / generate_variations):
// variation v is the single generation of seed + v on every path; a batching token backend gets the variations in
// chunks of its size, its events are renumbered, and a failure finishes them on the CPU; previews, meshes, validation;
// with a GPU shape stage, each variation's clean-up (in parallel, beside the next ones' GPU work) gives what
// tokens_to_mesh gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>

#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/test_model.h"
#include "test_util.h"
#include "tiny_model_fixture.h"

using namespace cubeforge;
namespace fs = std::filesystem;

namespace {

using cftest::error_of;

class FakeBatchBackend;

class VariationsTest : public cftest::TinyModelFixture<VariationsTest, 5> {
 protected:
  void TearDown() override { model_->set_token_backend(nullptr); }
  static GenerationRequest request(int variations) {
    GenerationRequest r;
    r.prompt = "a wooden stool";
    r.top_p = 0.9f;
    r.seed = 40;
    r.variations = variations;
    return r;
  }
  // Installs a FakeBatchBackend on the model (num_codes and N from its config); the model owns it.
  static FakeBatchBackend* install_fake();
  static std::vector<int> single(uint64_t seed) {
    GenerationRequest r = request(1);
    r.seed = seed;
    return model_->generate_tokens(r).tokens;
  }
};

// A token backend that decodes `batch` variations per call: tokens depend only on (seed, index), so the
// renumbering and seeds of Cube3D's chunks can be checked; it records the calls and can fail on the first one.
class FakeBatchBackend : public TokenBackend {
 public:
  struct Call {
    int count;
    uint64_t seed;
  };
  int batch = 2, num_codes = 1, N = 32;
  bool fail_first = false, short_lists = false;  // throw on the first call / return one token list too few
  std::vector<Call> calls;

  static int token(uint64_t seed, int i, int K) { return int((seed * 7919 + uint64_t(i) * 31) % uint64_t(K)); }
  std::string name() const override { return "fake-batch"; }
  int max_variations() const override { return batch; }
  std::vector<std::vector<int>> generate_variations(const std::vector<float>&, int, const GenerationRequest& req, int count,
                                                    const TokenCallback& cb, const CancelToken*,
                                                    GenerationStats* stats) override {
    calls.push_back({count, req.seed});
    if (fail_first && calls.size() == 1) throw Error("device lost");
    std::vector<std::vector<int>> out(count);
    for (int i = 0; i < N; ++i)
      for (int v = 0; v < count; ++v) {
        out[v].push_back(token(req.seed + uint64_t(v), i, num_codes));
        if (cb) cb(TokenEvent{i, out[v].back(), 0.1 * (i + 1), v});
        if (stats && v == 0) stats->token_ms.push_back(0.1 * (i + 1));
      }
    if (short_lists) out.pop_back();
    return out;
  }
};

FakeBatchBackend* VariationsTest::install_fake() {
  auto owned = std::make_unique<FakeBatchBackend>();
  FakeBatchBackend* fake = owned.get();
  fake->num_codes = model_->config().shape.num_codes;
  fake->N = model_->config().num_tokens();
  model_->set_token_backend(std::move(owned));
  return fake;
}

TEST_F(VariationsTest, EachVariationIsTheSingleGenerationOfItsSeed) {
  const int N = model_->config().num_tokens();
  std::vector<int> events(3, 0);
  std::vector<std::vector<int>> streamed(3);
  const auto res = model_->generate_token_variations(request(3), [&](const TokenEvent& e) {
    ASSERT_GE(e.variation, 0);
    ASSERT_LT(e.variation, 3);
    EXPECT_EQ(e.index, events[e.variation]++);  // in order within each variation
    streamed[e.variation].push_back(e.id);
  });
  ASSERT_EQ(res.size(), 3u);
  std::set<std::vector<int>> distinct;
  for (int v = 0; v < 3; ++v) {
    EXPECT_EQ(res[v].tokens, single(40 + v)) << "variation " << v;
    EXPECT_EQ(streamed[v], res[v].tokens);
    EXPECT_EQ(int(res[v].stats.token_ms.size()), N);
    EXPECT_EQ(res[v].stats.backend, "cpu");
    distinct.insert(res[v].tokens);
  }
  EXPECT_EQ(distinct.size(), 3u);  // top-p 0.9 on a random model: the seeds give different shapes
  // The CPU runs them in turn: the later variations' tokens come later.
  EXPECT_GT(res[2].stats.ttft_ms, res[0].stats.token_ms.back());
}

TEST_F(VariationsTest, RequestsAreValidated) {
  const auto& cfg = model_->config();
  GenerationRequest greedy = request(2);
  greedy.top_p.reset();
  EXPECT_NE(error_of([&] { validate_request(greedy, cfg); }).find("variations need top-p"), std::string::npos);
  greedy.variations = 1;
  EXPECT_NO_THROW(validate_request(greedy, cfg));
  EXPECT_NE(error_of([&] { validate_request(request(0), cfg); }).find("variations must be 1 to 8"), std::string::npos);
  EXPECT_NE(error_of([&] { validate_request(request(kMaxVariations + 1), cfg); }).find("variations must be 1 to 8"),
            std::string::npos);
  // The single-result calls refuse several variations instead of dropping all but one.
  EXPECT_NE(error_of([&] { model_->generate_tokens(request(2)); }).find("generate_token_variations"), std::string::npos);
  EXPECT_NE(error_of([&] { model_->generate(request(2), cftest::coarse_mesh()); }).find("generate_variations"), std::string::npos);
}

TEST_F(VariationsTest, BatchingBackendGetsChunksWithConsecutiveSeeds) {
  FakeBatchBackend* fake = install_fake();
  std::vector<std::vector<int>> streamed(5);
  const auto res = model_->generate_token_variations(request(5), [&](const TokenEvent& e) {
    streamed.at(e.variation).push_back(e.id);
  });
  ASSERT_EQ(fake->calls.size(), 3u);  // 2 + 2 + 1
  EXPECT_EQ(fake->calls[0].count, 2);
  EXPECT_EQ(fake->calls[0].seed, 40u);
  EXPECT_EQ(fake->calls[1].count, 2);
  EXPECT_EQ(fake->calls[1].seed, 42u);
  EXPECT_EQ(fake->calls[2].count, 1);
  EXPECT_EQ(fake->calls[2].seed, 44u);
  ASSERT_EQ(res.size(), 5u);
  for (int v = 0; v < 5; ++v) {
    ASSERT_EQ(int(res[v].tokens.size()), fake->N);
    for (int i = 0; i < fake->N; ++i) ASSERT_EQ(res[v].tokens[i], FakeBatchBackend::token(40 + v, i, fake->num_codes));
    EXPECT_EQ(streamed[v], res[v].tokens) << "variation " << v;
    EXPECT_EQ(res[v].stats.backend, "fake-batch");
  }
}

TEST_F(VariationsTest, BackendFailureFinishesEveryVariationOnTheCpu) {
  FakeBatchBackend* fake = install_fake();
  fake->fail_first = true;
  const auto res = model_->generate_token_variations(request(3));
  EXPECT_EQ(fake->calls.size(), 1u);  // not tried again for the later variations
  ASSERT_EQ(res.size(), 3u);
  model_->set_token_backend(nullptr);
  for (int v = 0; v < 3; ++v) {
    EXPECT_EQ(res[v].tokens, single(40 + v)) << "variation " << v;
    EXPECT_EQ(res[v].stats.backend, "cpu (fake-batch failed: device lost)");
  }
}

// A backend that hands back another number of token lists than asked is a failure like any other: the CPU path
// makes the variations, and the stats say why.
TEST_F(VariationsTest, WrongNumberOfTokenListsFallsBackToTheCpu) {
  install_fake()->short_lists = true;
  const auto res = model_->generate_token_variations(request(2));
  ASSERT_EQ(res.size(), 2u);
  model_->set_token_backend(nullptr);
  for (int v = 0; v < 2; ++v) {
    EXPECT_EQ(res[v].tokens, single(40 + v)) << "variation " << v;
    EXPECT_EQ(res[v].stats.backend, "cpu (fake-batch failed: it returned 1 token lists for 2 variations)");
  }
}

TEST_F(VariationsTest, MeshesAndPreviewsOfEveryVariation) {
  const MeshOptions mo = cftest::coarse_mesh();
  const PreviewOptions po = cftest::preview_every_8();
  std::vector<int> preview_at;
  std::vector<std::string> stages;
  const auto res = model_->generate_variations(request(2), mo, {}, [&](int k, const Mesh&) { preview_at.push_back(k); },
                                               po, nullptr, [&](const std::string& s) { stages.push_back(s); });
  ASSERT_EQ(res.size(), 2u);
  // On the CPU the variations decode in turn and the previews follow each one.
  EXPECT_EQ(preview_at, (std::vector<int>{8, 16, 24, 8, 16, 24}));
  for (int v = 0; v < 2; ++v) {
    const Mesh m = model_->tokens_to_mesh(res[v].tokens, mo);
    EXPECT_EQ(res[v].mesh.positions, m.positions) << "variation " << v;
    EXPECT_EQ(res[v].mesh.triangles, m.triangles) << "variation " << v;
    EXPECT_EQ(res[v].stats.previews, 6);
    EXPECT_EQ(res[v].stats.points_dense, size_t(17 * 17 * 17));
  }
  EXPECT_GE(res[1].stats.total_ms, res[0].stats.total_ms);
  EXPECT_EQ(std::count(stages.begin(), stages.end(), "meshing"), 2);  // each variation's shape stage is reported
  // Variation 1 is the single generation of seed 41, mesh included.
  GenerationRequest one = request(1);
  one.seed = 41;
  const auto alone = model_->generate(one, mo);
  EXPECT_EQ(alone.tokens, res[1].tokens);
  EXPECT_EQ(alone.mesh.positions, res[1].mesh.positions);
}

// A GPU shape stage stand-in: a mesh that depends on the tokens and that clean-up changes (a small far-away piece
// for the component filter, an offset for the base pivot), made on the calling thread, which it records.
class FakeShapeStage : public ShapeBackend {
 public:
  std::vector<std::thread::id> threads;
  std::string name() const override { return "fake-gpu-shape"; }
  Mesh tokens_to_mesh(const std::vector<int>& tokens, const MeshOptions&, const CancelToken*,
                      GenerationStats* st) override {
    threads.push_back(std::this_thread::get_id());
    const float s = 0.5f + 0.01f * float(tokens[0] % 50), x = 0.3f + 0.001f * float(tokens[1] % 100);
    Mesh m;
    m.positions = {{x, 0.2f, 0}, {x + s, 0.2f, 0}, {x, 0.2f + s, 0}, {x, 0.2f, s},
                   {2, 0.2f, 0}, {2.01f, 0.2f, 0}, {2, 0.21f, 0}};
    m.triangles = {{0, 1, 2}, {0, 2, 3}, {0, 3, 1}, {1, 3, 2}, {4, 5, 6}};
    st->points_evaluated = 11;
    return m;
  }
  Mesh preview_mesh(const std::vector<int>&, int, const AdaptiveOptions&, const CancelToken*) override { return {}; }
};

TEST_F(VariationsTest, GpuShapeStageCleansEveryVariationLikeTokensToMesh) {
  install_fake()->batch = 4;
  auto owned = std::make_unique<FakeShapeStage>();
  FakeShapeStage* shape = owned.get();
  model_->set_shape_backend(std::move(owned));
  MeshOptions mo = cftest::coarse_mesh();
  mo.base_pivot = true;
  std::vector<std::string> stages;
  const auto res = model_->generate_variations(request(3), mo, {}, {}, {}, nullptr,
                                               [&](const std::string& s) { stages.push_back(s); });
  ASSERT_EQ(res.size(), 3u);
  // Each variation's stages in order, from the calling thread (the clean-ups run beside the next variations' GPU work).
  EXPECT_EQ(stages, (std::vector<std::string>{"gpt", "latents", "cleanup", "latents", "cleanup", "latents", "cleanup"}));
  ASSERT_EQ(shape->threads.size(), 3u);
  for (const auto& t : shape->threads) EXPECT_EQ(t, std::this_thread::get_id());
  for (int v = 0; v < 3; ++v) {
    GenerationStats st;
    const Mesh m = model_->tokens_to_mesh(res[v].tokens, mo, nullptr, &st);
    EXPECT_EQ(m.triangles.size(), 4u);  // the far-away piece is filtered
    EXPECT_EQ(res[v].mesh.positions, m.positions) << "variation " << v;
    EXPECT_EQ(res[v].mesh.triangles, m.triangles) << "variation " << v;
    EXPECT_EQ(res[v].stats.shape_backend, "fake-gpu-shape");
    EXPECT_EQ(res[v].stats.points_evaluated, 11u);
    EXPECT_GE(res[v].stats.total_ms, res[v].stats.cleanup_ms);
  }
  EXPECT_NE(res[0].mesh.positions, res[1].mesh.positions);  // the variations' own meshes, not one of them thrice
  EXPECT_NE(res[1].mesh.positions, res[2].mesh.positions);
}

}  // namespace
