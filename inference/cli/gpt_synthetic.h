// What `cubeforge-gen bench` (cmd_bench.cpp) and `cuda-check` (cmd_cuda_check.cpp) share: their options, the presets
// (the real v0.1 / v0.5 shapes, and small ones for sanitizers and localising), seeded synthetic weights and
// conditioning of those shapes (never zeros; the same name gives the same tensor in every build), and the helpers
// that compare runs (first differing token, output hashes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cubeforge/model_config.h"
#ifdef CUBEFORGE_HAVE_CUDA
#include "cubeforge/cuda_gpt.h"
#endif

namespace cubeforge::cli::gpt_bench {

struct BenchArgs {
  std::string preset = "v0.1";
  std::vector<int> batches{1, 2, 4, 8};
  int steps_per_graph = 8;
  uint64_t seed = 1;
  bool pdl = true;
  int variant = 0;
  int reps = 2;
  bool quick = false;
  int copy_mb = 2048;  // bench: buffer of the device-to-device copy that the bandwidth is compared with
  float batch_top_p = 0;  // bench: the batch runs sample with this top-p (the editor's variations), 0 = greedy
  std::vector<int> attribute;  // cuda-check: engine variants compared (pass 0 only) against the same reference
  int tokens = 0, cond_len = 0;  // > 0: override the preset's tokens per object / conditioning length (localising)
};

// Parses the options both commands take; false after --help (usage printed), exits with status 2 on a bad option.
bool parse_args(int argc, char** argv, BenchArgs& a, const char* usage);

#ifdef CUBEFORGE_HAVE_CUDA
struct Preset {
  GptConfig cfg;
  int N = 512, s = 77;
};
Preset make_preset(const std::string& name, const BenchArgs& a);

// Seeded uniform weights of the names and shapes the engine asks for (norm weights around 1, biases small).
cubeforge::cuda::GptWeightSource synthetic_weights(uint64_t seed);
// cond for P variations of one prompt: rows [0,P) the prompt, [P,2P) the unconditional cond (std 1).
std::vector<float> synthetic_cond(int P, int s, uint64_t seed);
// Index of the first token where two generations differ (the shorter length if one is a prefix of the other).
size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

// The output hashes of a run (variant bit 24): [N steps][K kernels][W words] (word 0 a kernel's outputs, 1.. stages
// inside it), the kernels' names.
struct HashLogView {
  const std::vector<unsigned>& h;
  const std::vector<std::string>& names;
  size_t K = 0, W = 0;
  HashLogView(const std::vector<unsigned>& hashes, const std::vector<std::string>& kernel_names, int num_tokens)
      : h(hashes), names(kernel_names), K(kernel_names.size()) {
    if (K > 0 && num_tokens > 0) W = h.size() / ((size_t)num_tokens * K);
  }
  bool usable() const { return W > 0; }
  size_t entry(size_t pos, size_t k) const { return (pos * K + k) * W; }
};

// A run's hashes against the first run's: the first (step, kernel) whose outputs differ (its inputs, the earlier
// kernels' outputs, were equal), which of its words differ and how many kernels differ at that step.
void print_hash_difference(const HashLogView& run, const HashLogView& ref);
// Within one run, per fused-MLP launch: the weights it took from its rings (words 5: gate/up stages requested before
// the wait, 6: the other gate/up stages, 7: the down-proj) are the same in every step: how many launches differ.
void check_mlp_words(const HashLogView& run, int num_tokens);
#endif

}  // namespace cubeforge::cli::gpt_bench
