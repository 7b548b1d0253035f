// The CUDA token loop as a Cube3D TokenBackend. Declared everywhere; defined only in CUDA builds (target
// cubeforge_cuda, CUBEFORGE_HAVE_CUDA=1). enable_best_backend() is the one call front ends make: it picks CUDA
// when a usable GPU is present and otherwise keeps the CPU path, returning a line that says which and why.
#pragma once
#include <memory>
#include <string>

#include "cubeforge/cube3d.h"

namespace cubeforge {

#ifdef CUBEFORGE_HAVE_CUDA
// nullptr (with *why) when no usable GPU is present or the model does not fit; never throws.
std::unique_ptr<TokenBackend> make_cuda_token_backend(const Cube3D& model, std::string* why);
#endif

// preference: "auto" (CUDA if usable), "cpu", "cuda" (an error if CUDA is not usable). Returns e.g.
// "cuda (NVIDIA H200)" or "cpu (no CUDA in this build)".
inline std::string enable_best_backend(Cube3D& model, const std::string& preference = "auto") {
  if (preference == "cpu") {
    model.set_token_backend(nullptr);
    return "cpu";
  }
  std::string why = "no CUDA in this build";
#ifdef CUBEFORGE_HAVE_CUDA
  if (auto b = make_cuda_token_backend(model, &why)) {
    std::string name = b->name();
    model.set_token_backend(std::move(b));
    return name;
  }
#endif
  if (preference == "cuda") throw Error("CUDA backend unavailable: " + why);
  return "cpu (" + why + ")";
}

}  // namespace cubeforge
