// `cubeforge-gen golden DIR NAME`: runs a golden case through the library and prints one line per tensor,
// then `golden NAME: max_rel_err=X tokens=match|mismatch`. Exit 0 only when every check holds.
// `--backend cuda`: the case through the CUDA paths instead: the GPT stage (cuda_golden.h: bf16 tolerance 2e-2 on
// the teacher-forced logits, identical greedy tokens) and CLIP through the CUDA text encoder (fp32, 1e-4), then
// `golden NAME (cuda): logits_rel_err=X tokens=... clip_rel_err=Y`, and the shape stage (cuda_shape_golden.h:
// latents, query logits, rb-4 grid, relative L2 < 2e-2), then `golden NAME (cuda shape): max_rel_err=X ok|FAIL`.
// `--stage gpt|shape` runs one of the two (gpt: GPT and CLIP).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "command.h"
#include "cubeforge/cuda_golden.h"
#include "cubeforge/cuda_shape_golden.h"
#include "cubeforge/golden.h"

namespace {

int run_cuda(const std::string& dir, const std::string& name, const std::string& stage) {
#ifdef CUBEFORGE_HAVE_CUDA
  bool ok = true;
  if (stage != "shape") {
    try {
      const auto r = cubeforge::run_golden_cuda(dir, name);
      for (const auto& l : r.lines) std::printf("  %s\n", l.c_str());
      std::printf("golden %s (cuda, %s): logits_rel_err=%.3e worst_step=%.3e causal_rel_err=%.3e vs_cpu=%.3e "
                  "argmax=%d/%d tokens=%s clip_rel_err=%.3e\n",
                  name.c_str(), r.engine.c_str(), r.logits_rel_err, r.worst_step_rel_err, r.causal_rel_err,
                  r.vs_cpu_rel_err, r.argmax_agree, r.steps,
                  r.tokens_match_graph && r.tokens_match_eager ? "match" : "mismatch", r.clip_rel_err);
      ok = ok && r.ok();
    } catch (const std::exception& e) {
      std::printf("golden %s (cuda): error: %s\n", name.c_str(), e.what());
      ok = false;
    }
  }
  if (stage != "gpt") {
    try {
      const auto r = cubeforge::run_shape_golden_cuda(dir, name);
      std::printf("  %s\n", r.engine.c_str());
      double mx = 0;
      for (const auto& l : r.lines) {
        std::printf("  %s\n", cubeforge::format_shape_golden_line(l).c_str());
        mx = std::max(mx, l.rel_err);
      }
      std::printf("golden %s (cuda shape): max_rel_err=%.3e tolerance=%.0e %s\n", name.c_str(), mx,
                  cubeforge::kCudaShapeGoldenTolerance, r.ok() ? "ok" : "FAIL");
      ok = ok && r.ok();
    } catch (const std::exception& e) {
      std::printf("golden %s (cuda shape): error: %s\n", name.c_str(), e.what());
      ok = false;
    }
  }
  return ok ? 0 : 1;
#else
  std::fprintf(stderr, "golden %s (cuda): this build has no CUDA backend\n", name.c_str());
  (void)dir;
  (void)stage;
  return 2;
#endif
}

int run(int argc, char** argv) {
  CLI::App app{"Compare a golden case (../shared/golden/cube3d format) with this implementation", argv[0]};
  std::string dir, name, backend = "cpu", stage = "all";
  app.add_option("DIR", dir, "case directory")->required();
  app.add_option("NAME", name, "case name (files NAME_config.json, NAME_*.safetensors)")->required();
  app.add_option("--backend", backend, "cpu: every stage on the fp32 CPU path (tolerance 1e-4); cuda: the GPT and "
                 "shape stages through the CUDA paths (bf16 tolerance 2e-2 relative L2, identical greedy tokens)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--stage", stage, "with --backend cuda: gpt, shape or all (default all)")
      ->check(CLI::IsMember({"gpt", "shape", "all"}));
  CLI11_PARSE(app, argc, argv);
  if (backend == "cuda") return run_cuda(dir, name, stage);
  auto r = cubeforge::run_golden(dir, name);
  for (const auto& l : r.lines) {
    std::printf("%-34s rel_err=%.3e  %s%s%s\n", l.tensor.c_str(), l.rel_err, l.ok ? "ok" : "FAIL",
                l.note.empty() ? "" : "  ", l.note.c_str());
  }
  std::printf("golden %s: max_rel_err=%.3e tokens=%s\n", name.c_str(), r.max_rel_err, r.tokens_match ? "match" : "mismatch");
  return r.ok() ? 0 : 1;
}

}  // namespace

CUBEFORGE_COMMAND("golden", "compare a golden case with this implementation (--backend cuda: the CUDA GPT and shape paths)",
                  run);
