// The CUDA token loop as a Cube3D TokenBackend. Declared everywhere; defined only in CUDA builds (target
// cubeforge_cuda, CUBEFORGE_HAVE_CUDA=1). enable_best_backend() is the one call front ends make: it picks CUDA
// when a usable GPU is present and otherwise keeps the CPU path, returning a line that says which and why.
#pragma once
#include <cstdlib>
#include <memory>
#include <string>

#include "cubeforge/cube3d.h"

namespace cubeforge {

#ifdef CUBEFORGE_HAVE_CUDA
// nullptr (with *why) when no usable GPU is present or the model does not fit; never throws.
std::unique_ptr<TokenBackend> make_cuda_token_backend(const Cube3D& model, std::string* why);
#endif

// preference: "auto", "cpu", "cuda" (an error if CUDA is not usable). Returns e.g. "cuda (NVIDIA H200)" or
// "cpu (no CUDA in this build)". "auto" takes the CUDA token loop whenever a usable GPU is present (it passes its
// teacher-forced logit check against the fp32 path on the H200: 1.16e-2 relative, docs/cuda-gpt.md) and otherwise
// keeps the CPU path with the reason (no GPU, old driver, not compute capability 9.0, GPU too small for the model,
// a configuration neither the fast kernels nor the generic-width kernels support). Models of other widths than
// Cube 3D's (the default model, the golden cases) run on the generic-width kernels, named "cuda (GPU, generic
// kernels)". A CUDA error during generation makes Cube3D fall back to the CPU
// path for that request (cube3d.h). CUBEFORGE_NO_CUDA=1 keeps "auto" on the CPU.
inline std::string enable_best_backend(Cube3D& model, const std::string& preference = "auto") {
  if (preference == "cpu") {
    model.set_token_backend(nullptr);
    return "cpu";
  }
  if (preference == "auto" && std::getenv("CUBEFORGE_NO_CUDA")) {
    model.set_token_backend(nullptr);
    return "cpu (CUBEFORGE_NO_CUDA is set)";
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
