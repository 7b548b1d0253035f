// Generic-width CUDA decode path of the GPT stage (DualStreamRoformer, spec cube3d-reference.md §3-§7): any
// n_embd / n_head / head size / vocabulary / layer counts, for the small models (the golden tiny cases, the shipped
// default model) that the fast kernels (gpt_kernels.cuh, fixed to n_embd 1536, 12 heads of 128) cannot run.
// CudaGptEngine::create() builds one of these when the widths are not the fast kernels' widths and forwards every
// public method to it, so callers see the same API (cuda_gpt.h).
//
// Numerics: Linear weights and biases bf16 (RNE from fp32 at load), q/k RMSNorm weights and wte fp32, every
// activation fp32 (fp32 FMA GEMMs on the bf16 weights: no activation rounding at all), KV cache fp32, logits fp32,
// CFG in fp32 with gamma_i = g (N - i) / N as on the CPU. Correctness and clarity first: plain tiled kernels.
// Plain C++ header (no CUDA types).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cubeforge/cuda_gpt.h"

namespace cubeforge::cuda {

class GenericGptEngine {
 public:
  // Empty when the generic kernels can run this configuration, else the reason (one line).
  static std::string unsupported(const GptConfig& cfg, int num_tokens, int cond_len, int max_batch_rows);
  // Same contract as CudaGptEngine::create (throws cubeforge::Error with a clear message).
  static std::unique_ptr<GenericGptEngine> create(const GptConfig& cfg, int num_tokens, int cond_len,
                                                  const GptWeightSource& weights, int max_batch_rows,
                                                  const EngineOptions& opts);
  ~GenericGptEngine();
  GenericGptEngine(const GenericGptEngine&) = delete;
  GenericGptEngine& operator=(const GenericGptEngine&) = delete;

  double prefill(const float* cond, int rows, bool cfg);
  std::vector<int32_t> generate(const GenerateOptions& options, GenerateStats* stats);
  // Raw logits are fp32 here (no bf16 rounding); *argmax is the on-device guided argmax of that step.
  std::vector<float> step_logits(const std::vector<int32_t>& feed, float guidance, SingleBlockAttention mode,
                                 bool use_graph, std::vector<int32_t>* argmax);
  size_t vram_bytes() const;
  size_t weight_bytes() const;
  double decode_bytes_per_step(int rows, SingleBlockAttention mode) const;
  int rows() const;
  int num_tokens() const;
  int cond_len() const;
  std::string device_name() const;

 private:
  GenericGptEngine();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cubeforge::cuda
