// `cubeforge-gen bench-text-gpu`: the CLIP text tower on the CPU (fp32, the reference path) and through the CUDA
// text encoder (cuda_text.h, fp32) in one process, on a real model (default: the shipped default model) or on a
// random-weight CLIP ViT-L/14 text tower (--synthetic clip-l: the size Cube 3D uses). Per prompt: CPU ms, GPU ms
// (host wall and device events), relative L2 and max |diff| of the 77 hidden states GPU vs CPU. Medians over --reps.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "arg_lists.h"
#include "command.h"
#include "stats_util.h"
#include "cubeforge/clip_tokenizer.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/golden.h"
#include "cubeforge/test_model.h"
#include "model_location.h"

namespace {

using Clock = std::chrono::steady_clock;

using cubeforge::cli::median;

template <typename F>
double median_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return median(t);
}

int run(int argc, char** argv) {
  CLI::App app{"CLIP text tower: CPU fp32 vs the CUDA text encoder (time and error)", argv[0]};
  std::string model_dir, clip_dir, synthetic, tokenizer,
      prompts = "a burger;a tall wooden chair with a high back;a red sports car with four wheels and a spoiler";
  int reps = 5, threads = 0;
  app.add_option("--model", model_dir, "model directory (default: the shipped default model)");
  app.add_option("--clip", clip_dir, "CLIP text model directory (default: <model>/clip)");
  app.add_option("--synthetic", synthetic, "clip-l: a random-weight CLIP ViT-L/14 text tower (with --tokenizer)")
      ->check(CLI::IsMember({"clip-l"}));
  app.add_option("--tokenizer", tokenizer, "vocab.json/merges.txt directory for --synthetic");
  app.add_option("--prompts", prompts, "prompts separated by ';' (the empty, unconditional prompt is always added)");
  app.add_option("--reps", reps, "timed runs per prompt and backend (median)")->check(CLI::Range(1, 100));
  app.add_option("--threads", threads, "CPU threads (0: all cores)");
  CLI11_PARSE(app, argc, argv);
#ifndef CUBEFORGE_HAVE_CUDA
  std::fprintf(stderr, "bench-text-gpu: this build has no CUDA backend\n");
  return 2;
#else
  cubeforge::set_cpu_threads(threads);
  namespace fs = std::filesystem;
  cubeforge::ModelFiles files;
  std::string tmp;
  if (!synthetic.empty()) {
    if (tokenizer.empty()) throw cubeforge::Error("--synthetic clip-l needs --tokenizer DIR (vocab.json, merges.txt)");
    auto cfg = cubeforge::test_model_preset("tiny");  // tiny GPT and shape model: only the text tower matters here
    cfg.text = cubeforge::TextConfig{};                // CLIP ViT-L/14 text tower: 12 layers of 768, MLP 3072
    cfg.gpt.text_model_embed_dim = cfg.text.hidden_size;
    tmp = (fs::temp_directory_path() / ("cubeforge-clip-l-" + std::to_string(::getpid()))).string();
    std::printf("writing a random CLIP-L text tower to %s\n", tmp.c_str());
    cubeforge::write_random_model(tmp, cfg, tokenizer, 7);
    files = cubeforge::ModelFiles::from_directory(tmp);
  } else {
    files = cubeforge::resolve_model_files(model_dir, clip_dir, argv[0]);
  }
  auto model = cubeforge::Cube3D::load(files);
  const auto tok = cubeforge::ClipTokenizer::load((fs::path(files.clip_dir) / "vocab.json").string(),
                                                  (fs::path(files.clip_dir) / "merges.txt").string());
  std::string why = "unknown reason";
  auto gpu = cubeforge::make_cuda_text_backend(*model, &why);
  if (!gpu) throw cubeforge::Error("CUDA text encoder unavailable: " + why);
  const auto& tc = model->config().text;
  std::printf("text tower: %d layers, width %d, MLP %d, %d heads, %s; GPU: %s\n", tc.num_hidden_layers,
              tc.hidden_size, tc.intermediate_size, tc.num_attention_heads, tc.hidden_act.c_str(), gpu->name().c_str());
  std::printf("%-44s %6s %9s %9s %11s %10s\n", "prompt", "tokens", "CPU ms", "GPU ms", "rel L2", "max |d|");
  double worst = 0;
  std::vector<double> cpu_all, gpu_all;
  auto list = cubeforge::cli::split_list(prompts, ';');
  list.push_back("");  // the unconditional row of every guided generation
  for (const auto& p : list) {
    const auto e = tok.encode(p);
    int n = 0;
    for (auto m : e.attention_mask) n += int(m);
    std::vector<float> hc, hg;
    const double cpu_ms = median_ms(reps, [&] { model->encode_text(e.input_ids, e.attention_mask, 1, hc); });
    gpu->encode(e.input_ids, e.attention_mask, 1, hg);  // warm-up (cuBLAS heuristics, first launches)
    const double gpu_ms = median_ms(reps, [&] { gpu->encode(e.input_ids, e.attention_mask, 1, hg); });
    double mx = 0;
    for (size_t i = 0; i < hc.size(); ++i) mx = std::max(mx, double(std::fabs(hc[i] - hg[i])));
    const double rel = cubeforge::relative_l2(hg.data(), hc.data(), hc.size());
    worst = std::max(worst, rel);
    cpu_all.push_back(cpu_ms);
    gpu_all.push_back(gpu_ms);
    const std::string shown = p.empty() ? "(empty prompt)" : p.substr(0, 44);
    std::printf("%-44s %6d %9.2f %9.3f %11.3e %10.3e\n", shown.c_str(), n, cpu_ms, gpu_ms, rel, mx);
  }
  std::printf("median over prompts: CPU %.2f ms, GPU %.3f ms (%.1fx); worst rel L2 GPU vs CPU %.3e (%s the fp32 "
              "golden bar 1e-4)\n",
              median(cpu_all), median(gpu_all), median(cpu_all) / std::max(1e-9, median(gpu_all)), worst,
              worst < 1e-4 ? "within" : "OUTSIDE");
  if (!tmp.empty()) fs::remove_all(tmp);
  return worst < 1e-4 ? 0 : 1;
#endif
}

}  // namespace

CUBEFORGE_COMMAND("bench-text-gpu", "CLIP text tower: CPU fp32 vs the CUDA text encoder (time, error)", run);
