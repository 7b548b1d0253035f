// Golden cases (../shared/golden/cube3d format) through the CUDA GPT path, with bf16 tolerances: teacher-forced
// per-step logits (cond, uncond, guided) against the reference's fp32 outputs and against this library's CPU path,
// the causal single-block mode against the uncached full forward, greedy tokens (graph and eager), on-device argmax,
// seeded top-p reproducibility and cancellation; and the CUDA text encoder (fp32) against the golden CLIP states.
// Declared everywhere; defined only in CUDA builds (cubeforge_cuda, CUBEFORGE_HAVE_CUDA=1). Used by `cubeforge-gen golden DIR NAME --backend cuda` and the GoogleTest.
#pragma once
#include <string>
#include <vector>

namespace cubeforge {

constexpr double kCudaGoldenLogitTolerance = 2e-2;  // relative L2 on logits (issue 7: bf16 tolerance)
constexpr double kCudaGoldenClipTolerance = 1e-4;   // relative L2 on CLIP's hidden states: fp32, the CPU path's bar

struct CudaGoldenReport {
  std::string name;
  std::string engine;            // "generic kernels" or "fast kernels"
  int steps = 0;
  double logits_rel_err = 0;     // teacher-forced [N,3,K] (cond, uncond, guided) vs the golden, reference mode
  double worst_step_rel_err = 0; // the largest per-step relative error of the same
  double guided_rel_err = 0;     // guided logits alone
  double vs_cpu_rel_err = 0;     // same logits vs this library's CPU fp32 path
  double causal_rel_err = 0;     // causal single-block mode vs full_forward_logits (-1 when the case has none)
  double graph_vs_eager_max_abs = 0;  // teacher-forced logits, graph replay vs eager launches
  int argmax_agree = 0;          // on-device guided argmax == golden greedy token (teacher forcing), of steps
  bool tokens_match_graph = false;   // generate(), greedy, CUDA graphs
  bool tokens_match_eager = false;   // generate(), greedy, eager launches
  bool tokens_streamed_in_order = false;
  bool topp_reproducible = false;    // top-p 0.9: same seed twice gives the same tokens, all in range
  bool cancel_ok = false;            // cancel after a few tokens throws Cancelled, the next generate() completes
  double clip_rel_err = 0;           // CUDA text encoder (fp32) vs clip_last_hidden_state, both rows
  double clip_vs_cpu_rel_err = 0;    // same vs this library's CPU text tower
  std::vector<std::string> lines;    // one line per check, for printing
  bool ok() const {
    return logits_rel_err < kCudaGoldenLogitTolerance && (causal_rel_err < kCudaGoldenLogitTolerance) &&
           clip_rel_err < kCudaGoldenClipTolerance &&
           tokens_match_graph && tokens_match_eager && tokens_streamed_in_order && topp_reproducible && cancel_ok;
  }
};

#ifdef CUBEFORGE_HAVE_CUDA
// Throws cubeforge::Error when no usable GPU is present (message from cuda_available) or the files are missing.
CudaGoldenReport run_golden_cuda(const std::string& dir, const std::string& name);
#endif

}  // namespace cubeforge
