// The CUDA GPT engine's weight source over a loaded CPU model (wte rows already rebuilt from the codebook, spec
// §2.3): every tensor is checked against the configuration's spec (name and shape) and copied out as fp32.
#pragma once
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/error.h"
#include "gpt/dual_stream_gpt.h"

namespace cubeforge {

// The returned source refers to gpt: keep the model alive while the engine loads.
inline cuda::GptWeightSource cuda_weight_source(const DualStreamGpt& gpt) {
  cuda::GptWeightSource src;
  src.get = [&gpt, spec = DualStreamGpt::tensor_spec(gpt.config())](const std::string& name,
                                                                     const std::vector<int64_t>& shape) {
    auto it = spec.find(name);
    if (it == spec.end() || it->second != shape) throw Error("CUDA backend: tensor '" + name + "' unknown or of another shape");
    const float* p = gpt.weights().get(name);
    size_t n = 1;
    for (auto d : shape) n *= size_t(d);
    return std::vector<float>(p, p + n);
  };
  return src;
}

}  // namespace cubeforge
