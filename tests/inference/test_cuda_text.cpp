// The CUDA text encoder (inference/src/cuda/clip_engine.cu, fp32) against the golden CLIP states and the CPU text
// tower, and its wiring into Cube3D. Runs where a CUDA build finds a usable GPU; skips with the reason elsewhere.
#include <gtest/gtest.h>

#include "cubeforge/cube3d.h"
#include "cubeforge/cuda_backend.h"
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/golden.h"
#include "cubeforge/safetensors.h"
#include "require_gpu.h"
#include "test_paths.h"

namespace {

class CudaTextGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaTextGolden, HiddenStatesMatchTheReferenceAtFp32Tolerance) {
  CF_REQUIRE_GPU();
#ifdef CUBEFORGE_HAVE_CUDA
  const std::string base = cftest::shared_dir() + "/golden/cube3d/" + GetParam();
  auto model = cubeforge::Cube3D::load(cubeforge::ModelFiles::from_golden_case(base));
  auto io = cubeforge::SafeTensors::open(base + "_io.safetensors");
  const auto ids = io.to_i64("clip_input_ids", {2, 77});
  const auto mask = io.to_i64("clip_attention_mask", {2, 77});
  const auto ref = io.to_f32("clip_last_hidden_state");
  std::string why;
  auto gpu = cubeforge::make_cuda_text_backend(*model, &why);
  ASSERT_TRUE(gpu) << why;
  std::vector<float> h, cpu;
  gpu->encode(ids, mask, 2, h);
  ASSERT_EQ(h.size(), ref.size());
  EXPECT_LT(cubeforge::relative_l2(h.data(), ref.data(), h.size()), 1e-4);
  model->encode_text(ids, mask, 2, cpu);
  EXPECT_LT(cubeforge::relative_l2(h.data(), cpu.data(), h.size()), 1e-5);
  std::vector<int64_t> bad = ids;
  bad[3] = 1 << 20;  // outside the vocabulary: the CPU path's message
  EXPECT_THROW(gpu->encode(bad, mask, 2, h), cubeforge::Error);
#endif
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaTextGolden, ::testing::Values("tiny_v01", "tiny_v05"));

TEST(CudaText, DefaultModelEncodesOnTheGpuWithAutoBackend) {
  CF_REQUIRE_GPU();
#ifdef CUBEFORGE_HAVE_CUDA
  auto model = cubeforge::Cube3D::load(
      cubeforge::ModelFiles::from_directory(cftest::source_dir() + "/assets/default-model"));
  const std::string line = cubeforge::enable_best_backend(*model, "auto");
  ASSERT_EQ(line.rfind("cuda", 0), 0u) << line;
  EXPECT_EQ(model->text_backend_name().rfind("cuda", 0), 0u) << model->text_backend_name();
  cubeforge::GenerationRequest req;
  req.prompt = "a tall chair with a high back";
  const auto res = model->generate_tokens(req);
  EXPECT_EQ(res.stats.text_backend.rfind("cuda", 0), 0u) << res.stats.text_backend;
  std::vector<int64_t> ids(77, 49407), mask(77, 0);
  ids[0] = 49406;
  ids[1] = 320;  // "a"
  mask[0] = mask[1] = mask[2] = 1;
  std::vector<float> gpu, cpu;
  std::string used;
  model->encode_text(ids, mask, 1, gpu, nullptr, &used);
  EXPECT_EQ(used.rfind("cuda", 0), 0u) << used;
  model->set_text_backend(nullptr);
  model->encode_text(ids, mask, 1, cpu, nullptr, &used);
  EXPECT_EQ(used, "cpu");
  ASSERT_EQ(gpu.size(), cpu.size());
  EXPECT_LT(cubeforge::relative_l2(gpu.data(), cpu.data(), gpu.size()), 1e-5);
#endif
}

}  // namespace
