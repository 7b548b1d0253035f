// A test fixture that writes one tiny random-weight model (the real CLIP vocabulary) and loads it once per suite,
// plus error_of (the message a call throws). Each fixture class passes itself (CRTP) so suites keep their own model.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/test_model.h"
#include "test_util.h"

namespace cftest {

// The message of the cubeforge::Error f throws ("cancelled" for Cancelled, "" when it throws nothing).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cubeforge::Cancelled&) {
    return "cancelled";
  } catch (const cubeforge::Error& e) {
    return e.what();
  }
  return "";
}

// The coarsest mesh (rb 4) and a preview every 8 tokens at rb 4, fixed interval: the tiny model's 32 tokens give
// previews at 8, 16 and 24.
inline cubeforge::MeshOptions coarse_mesh() {
  cubeforge::MeshOptions mo;
  mo.resolution_base = 4;
  return mo;
}
inline cubeforge::PreviewOptions preview_every_8() {
  cubeforge::PreviewOptions po;
  po.every = 8;
  po.adaptive = false;
  po.resolution_base = 4;
  return po;
}

template <typename Suite, int WeightSeed>
class TinyModelFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(temp_dir(::testing::UnitTest::GetInstance()->current_test_suite()->name()));
    cubeforge::write_random_model(dir_->string(), cubeforge::test_model_preset("tiny"),
                                  shared_dir() + "/data/clip-tokenizer", WeightSeed);
    model_ = cubeforge::Cube3D::load(cubeforge::ModelFiles::from_directory(dir_->string())).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static inline std::filesystem::path* dir_ = nullptr;
  static inline cubeforge::Cube3D* model_ = nullptr;
};

}  // namespace cftest
