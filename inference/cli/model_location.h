// Where the CLI finds a model when --model is not given (the shipped default model).
#pragma once
#include <string>

#include "cubeforge/generation.h"

namespace cubeforge {

// --model DIR, else $CUBEFORGE_MODEL_DIR, else <exe>/../../assets/default-model, else ./assets/default-model.
ModelFiles resolve_model_files(const std::string& model_dir, const std::string& clip_dir, const char* argv0);

}  // namespace cubeforge
