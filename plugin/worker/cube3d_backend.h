// The real model backend: cubeforge::Cube3D on the CPU path (the CUDA GPT engine can slot in here later), plus the
// model-directory checks that turn missing or corrupt files into one clear message for the panel.
#pragma once
#include "worker/backend.h"

namespace cubeforge::ai {

std::shared_ptr<ModelBackend> make_cube3d_backend();

// Where the plugin looks for the default model: $CUBEFORGE_MODEL_DIR, else <exe dir>/../../assets/default-model
// (build/bin/cubeforge → repo/assets/default-model), else the same relative to the plugin library.
std::string default_model_dir();

// Quick check of a model directory without loading weights: empty when it looks complete, else what is wrong.
std::string check_model_dir(const std::string& dir);

}  // namespace cubeforge::ai
