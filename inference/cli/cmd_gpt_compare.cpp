// `cubeforge-gen gpt-compare`: prompt -> tokens on a real model (default: the shipped default model) through the
// CPU path and the CUDA path in one process: per prompt the wall time of generate_tokens (text stage + GPT), the
// GPT stage, prefill and TPOT of each backend, and how many tokens the two backends agree on. Medians last.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "arg_lists.h"
#include "command.h"
#include "stats_util.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/cuda_backend.h"
#include "model_location.h"

namespace {

using cubeforge::Cube3D;

struct Run {
  double wall_ms = 0, text_ms = 0, gpt_ms = 0, prefill_ms = 0, tpot_ms = 0;
  std::vector<int> tokens;
  std::string backend;
};

Run run_once(Cube3D& model, const cubeforge::GenerationRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  auto res = model.generate_tokens(req);
  Run r;
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.text_ms = res.stats.text_ms;
  r.gpt_ms = res.stats.gpt_ms;
  r.prefill_ms = res.stats.prefill_ms;
  const auto& tm = res.stats.token_ms;
  r.tpot_ms = tm.size() > 1 ? (tm.back() - tm.front()) / double(tm.size() - 1) : 0;
  r.tokens = res.tokens;
  r.backend = res.stats.backend;
  return r;
}

using cubeforge::cli::median;

int run(int argc, char** argv) {
  CLI::App app{"prompt -> tokens on the CPU and the CUDA path: timings and token agreement", argv[0]};
  std::string model_dir, clip_dir,
      prompts = "a burger;a tall chair with a high back;a pine tree with three tiers;a red car with six wheels;"
                "a mug with a handle;a round table with one leg;a sitting cat;a two-story house with a chimney";
  int runs = 2, threads = 0;
  app.add_option("--model", model_dir, "model directory (default: the shipped default model)");
  app.add_option("--clip", clip_dir, "CLIP text model directory (default: <model>/clip)");
  app.add_option("--prompts", prompts, "prompts separated by ';'");
  app.add_option("--runs", runs, "runs per prompt and backend (the median is reported)")->check(CLI::Range(1, 50));
  app.add_option("--threads", threads, "CPU threads (0: all cores)");
  CLI11_PARSE(app, argc, argv);
  cubeforge::set_cpu_threads(threads);
  auto model = Cube3D::load(cubeforge::resolve_model_files(model_dir, clip_dir, argv[0]));
  const auto list = cubeforge::cli::split_list(prompts, ';');
  cubeforge::GenerationRequest req;
  std::printf("model: %d tokens per object, n_embd %d, %d heads, %d dual + %d single blocks\n",
              model->config().num_tokens(), model->config().gpt.n_embd, model->config().gpt.n_head,
              model->config().gpt.n_layer, model->config().gpt.n_single_layer);
  // CPU first (no backend), then CUDA; a warm-up run per backend (first CLIP call, graph capture).
  std::vector<std::vector<Run>> cpu(list.size()), gpu(list.size());
  model->set_token_backend(nullptr);
  req.prompt = list.front();
  run_once(*model, req);
  for (size_t i = 0; i < list.size(); ++i) {
    req.prompt = list[i];
    for (int k = 0; k < runs; ++k) cpu[i].push_back(run_once(*model, req));
  }
  std::string line;
  try {
    line = cubeforge::enable_best_backend(*model, "cuda");
  } catch (const std::exception& e) {
    std::printf("CUDA path unavailable: %s\n", e.what());
    return 2;
  }
  std::printf("cuda backend: %s\n", line.c_str());
  req.prompt = list.front();
  run_once(*model, req);
  for (size_t i = 0; i < list.size(); ++i) {
    req.prompt = list[i];
    for (int k = 0; k < runs; ++k) gpu[i].push_back(run_once(*model, req));
  }
  std::printf("%-36s %9s %9s %9s %9s %9s %9s %9s %9s  %s\n", "prompt", "cpu wall", "cuda wall", "cpu gpt", "cuda gpt",
              "cpu pre", "cuda pre", "cpu tpot", "cuda tpot", "tokens equal");
  std::vector<double> cw, gw, cg, gg, ct, gt;
  int equal_total = 0, token_total = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    auto med = [&](const std::vector<Run>& v, double Run::*f) {
      std::vector<double> x;
      for (const auto& r : v) x.push_back(r.*f);
      return median(x);
    };
    const Run& c0 = cpu[i].front();
    const Run& g0 = gpu[i].front();
    int eq = 0, first = -1;
    for (size_t k = 0; k < std::min(c0.tokens.size(), g0.tokens.size()); ++k) {
      eq += c0.tokens[k] == g0.tokens[k];
      if (first < 0 && c0.tokens[k] != g0.tokens[k]) first = int(k);
    }
    equal_total += eq;
    token_total += int(c0.tokens.size());
    std::printf("%-36.36s %9.2f %9.2f %9.2f %9.2f %9.3f %9.3f %9.4f %9.4f  %d/%zu%s\n", list[i].c_str(),
                med(cpu[i], &Run::wall_ms), med(gpu[i], &Run::wall_ms), med(cpu[i], &Run::gpt_ms), med(gpu[i], &Run::gpt_ms),
                med(cpu[i], &Run::prefill_ms), med(gpu[i], &Run::prefill_ms), med(cpu[i], &Run::tpot_ms),
                med(gpu[i], &Run::tpot_ms), eq, c0.tokens.size(),
                first < 0 ? "" : (" (first difference at " + std::to_string(first) + ")").c_str());
    cw.push_back(med(cpu[i], &Run::wall_ms));
    gw.push_back(med(gpu[i], &Run::wall_ms));
    cg.push_back(med(cpu[i], &Run::gpt_ms));
    gg.push_back(med(gpu[i], &Run::gpt_ms));
    ct.push_back(med(cpu[i], &Run::tpot_ms));
    gt.push_back(med(gpu[i], &Run::tpot_ms));
  }
  std::printf("backends: cpu = %s, cuda = %s\n", cpu.front().front().backend.c_str(), gpu.front().front().backend.c_str());
  std::printf("median over prompts (ms): prompt->tokens wall cpu %.2f cuda %.2f (%.2fx); GPT stage cpu %.2f cuda %.2f "
              "(%.2fx); TPOT cpu %.4f cuda %.4f; greedy tokens equal %d/%d\n",
              median(cw), median(gw), median(cw) / std::max(1e-9, median(gw)), median(cg), median(gg),
              median(cg) / std::max(1e-9, median(gg)), median(ct), median(gt), equal_total, token_total);
  return 0;
}

}  // namespace

CUBEFORGE_COMMAND("gpt-compare", "prompt -> tokens on the CPU and the CUDA path: timings and token agreement", run);
