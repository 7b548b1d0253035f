// The generic-width CUDA GPT path (inference/src/cuda/gpt_generic.h) on the golden cases and the default model.
// Runs where a CUDA build finds a usable GPU; skips with the reason everywhere else (CPU builds, no GPU).
#include <gtest/gtest.h>

#include <cstdio>

#include "cubeforge/cube3d.h"
#include "cubeforge/cuda_backend.h"
#include "cubeforge/cuda_golden.h"
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/error.h"
#include "require_gpu.h"
#include "test_paths.h"

namespace {

class CudaGenericGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaGenericGolden, LogitsWithinBf16ToleranceAndGreedyTokensIdentical) {
  CF_REQUIRE_GPU();
#ifdef CUBEFORGE_HAVE_CUDA
  const auto r = cubeforge::run_golden_cuda(cftest::shared_dir() + "/golden/cube3d", GetParam());
  for (const auto& l : r.lines) std::printf("  %s\n", l.c_str());
  EXPECT_EQ(r.engine, "generic kernels");
  EXPECT_LT(r.logits_rel_err, cubeforge::kCudaGoldenLogitTolerance);
  EXPECT_LT(r.causal_rel_err, cubeforge::kCudaGoldenLogitTolerance);
  EXPECT_LT(r.vs_cpu_rel_err, cubeforge::kCudaGoldenLogitTolerance);
  EXPECT_EQ(r.argmax_agree, r.steps);
  EXPECT_TRUE(r.tokens_match_graph);
  EXPECT_TRUE(r.tokens_match_eager);
  EXPECT_TRUE(r.tokens_streamed_in_order);
  EXPECT_EQ(r.graph_vs_eager_max_abs, 0.0);
  EXPECT_TRUE(r.topp_reproducible);
  EXPECT_TRUE(r.cancel_ok);
#endif
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaGenericGolden, ::testing::Values("tiny_v01", "tiny_v05"));

TEST(CudaGeneric, DefaultModelRunsOnTheGpuWithAutoBackend) {
  CF_REQUIRE_GPU();
#ifdef CUBEFORGE_HAVE_CUDA
  auto model = cubeforge::Cube3D::load(
      cubeforge::ModelFiles::from_directory(cftest::source_dir() + "/assets/default-model"));
  cubeforge::GenerationRequest req;
  req.prompt = "a tall chair with a high back";
  const auto cpu = model->generate_tokens(req);
  const std::string line = cubeforge::enable_best_backend(*model, "auto");
  EXPECT_EQ(line.rfind("cuda", 0), 0u) << line;
  EXPECT_NE(line.find("generic kernels"), std::string::npos) << line;
  std::vector<int> streamed;
  const auto gpu = model->generate_tokens(req, [&](const cubeforge::TokenEvent& e) { streamed.push_back(e.id); });
  EXPECT_EQ(gpu.stats.backend.rfind("cuda", 0), 0u) << gpu.stats.backend;
  ASSERT_EQ(gpu.tokens.size(), cpu.tokens.size());
  EXPECT_EQ(streamed, gpu.tokens);
  int equal = 0;
  for (size_t i = 0; i < gpu.tokens.size(); ++i) {
    EXPECT_GE(gpu.tokens[i], 0);
    EXPECT_LT(gpu.tokens[i], model->config().gpt.shape_model_vocab_size);
    equal += gpu.tokens[i] == cpu.tokens[i];
  }
  std::printf("  default model, greedy: %d/%zu tokens equal to the CPU path's; GPT stage %.2f ms (CPU %.2f ms)\n", equal,
              gpu.tokens.size(), gpu.stats.gpt_ms, cpu.stats.gpt_ms);
  EXPECT_EQ(gpu.tokens.front(), cpu.tokens.front());
#endif
}

TEST(CudaGeneric, UnsupportedConfigurationIsRefusedWithAReason) {
  CF_REQUIRE_GPU();
#ifdef CUBEFORGE_HAVE_CUDA
  cubeforge::GptConfig cfg;
  cfg.n_embd = 60;
  cfg.n_head = 8;  // 60 / 8: not a whole head size
  cubeforge::cuda::GptWeightSource src{[](const std::string&, const std::vector<int64_t>&) -> std::vector<float> {
    throw cubeforge::Error("no weights needed");
  }};
  try {
    cubeforge::cuda::CudaGptEngine::create(cfg, 16, 8, src, 2);
    FAIL() << "create() accepted n_embd 60 with 8 heads";
  } catch (const cubeforge::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of n_head"), std::string::npos) << e.what();
  }
#endif
}

}  // namespace
