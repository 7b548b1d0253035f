// `cubeforge-gen bench-cpu`: CPU reference-path speed of the text-to-tokens half: text encoding, prefill, decode
// TPOT (mean, p50, p95) and tokens/s, over several runs in one process (first run reported separately as warm-up).
// Models: a directory (--model) or a random-weight preset built in a temporary directory (--preset).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "command.h"
#include "stats_util.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/safetensors.h"
#include "cubeforge/test_model.h"
#include "model_location.h"

namespace {

using cubeforge::cli::percentile;

int run(int argc, char** argv) {
  CLI::App app{"CPU benchmark of prompt → tokens", argv[0]};
  std::string model_dir, preset, tokenizer, golden, prompt = "a wooden chair with a high back";
  int runs = 3, threads = 0;
  bool json = false;
  app.add_option("--model", model_dir, "model directory");
  app.add_option("--preset", preset, "random-weight preset instead of a model: tiny | small | mid | v0.1 | v0.5");
  app.add_option("--golden", golden, "golden case DIR/NAME (pre-tokenized inputs of the case, no tokenizer needed)");
  app.add_option("--tokenizer", tokenizer, "CLIP vocab.json/merges.txt directory (for --preset)");
  app.add_option("--prompt", prompt, "prompt");
  app.add_option("--runs", runs, "timed runs after one warm-up");
  app.add_option("--threads", threads, "CPU threads (0: all)");
  app.add_flag("--json", json, "JSON output");
  CLI11_PARSE(app, argc, argv);
  cubeforge::set_cpu_threads(threads);
  std::filesystem::path tmp;
  if (!preset.empty()) {
    if (tokenizer.empty()) throw cubeforge::Error("--preset needs --tokenizer DIR");
    tmp = std::filesystem::temp_directory_path() / ("cubeforge_bench_" + preset + "_" + std::to_string(::getpid()));
    cubeforge::write_random_model(tmp.string(), cubeforge::test_model_preset(preset), tokenizer, 7);
    model_dir = tmp.string();
  }
  cubeforge::ModelFiles files;
  std::vector<float> golden_cond;
  if (!golden.empty()) {  // DIR/NAME of a ../shared/golden/cube3d case
    files = cubeforge::ModelFiles::from_golden_case(golden);
    model_dir = golden;
  } else {
    files = cubeforge::resolve_model_files(model_dir, "", argv[0]);
  }
  auto model = cubeforge::Cube3D::load(files);
  if (!golden.empty()) {
    auto io = cubeforge::SafeTensors::open(golden + "_io.safetensors");
    golden_cond = io.to_f32("cond");
  }
  cubeforge::GenerationRequest req;
  req.prompt = prompt;
  std::vector<double> text, prefill, tpot_mean, tpot_all, gpt;
  for (int r = 0; r <= runs; ++r) {
    cubeforge::TokenResult res;
    if (golden.empty()) {
      res = model->generate_tokens(req);
    } else {
      res.tokens = model->run_gpt(golden_cond, 2, 3.0f, std::nullopt, 0, cubeforge::AttentionMode::Reference, nullptr,
                                  nullptr, {}, nullptr, &res.stats);
    }
    if (r == 0) continue;  // warm-up: thread pools, page faults, uncond CLIP cache
    const auto& s = res.stats;
    text.push_back(s.text_ms);
    prefill.push_back(s.prefill_ms);
    gpt.push_back(s.gpt_ms);
    const std::vector<double> steps = s.token_gaps_ms();
    tpot_all.insert(tpot_all.end(), steps.begin(), steps.end());
    tpot_mean.push_back(std::accumulate(steps.begin(), steps.end(), 0.0) / double(std::max<size_t>(1, steps.size())));
  }
  const auto& c = model->config();
  nlohmann::json j = {{"model", preset.empty() ? model_dir : preset}, {"n_embd", c.gpt.n_embd}, {"n_layer", c.gpt.n_layer},
                      {"tokens", c.num_tokens()}, {"runs", runs}, {"text_ms_p50", percentile(text, 0.5)},
                      {"prefill_ms_p50", percentile(prefill, 0.5)}, {"tpot_ms_mean_p50", percentile(tpot_mean, 0.5)},
                      {"tpot_ms_p50", percentile(tpot_all, 0.5)}, {"tpot_ms_p95", percentile(tpot_all, 0.95)},
                      {"tokens_per_s", 1000.0 / std::max(1e-9, percentile(tpot_all, 0.5))}, {"gpt_ms_p50", percentile(gpt, 0.5)}};
  if (json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%-10s D=%d L=%d+%d N=%d | text %.2f ms | prefill %.2f ms | TPOT p50 %.3f ms p95 %.3f ms | %.0f tok/s | GPT stage %.1f ms (median of %d)\n",
                (preset.empty() ? "model" : preset.c_str()), c.gpt.n_embd, c.gpt.n_layer, c.gpt.n_single_layer, c.num_tokens(),
                percentile(text, 0.5), percentile(prefill, 0.5), percentile(tpot_all, 0.5), percentile(tpot_all, 0.95),
                1000.0 / std::max(1e-9, percentile(tpot_all, 0.5)), percentile(gpt, 0.5), runs);
  }
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  return 0;
}

}  // namespace

CUBEFORGE_COMMAND("bench-cpu", "CPU benchmark of prompt → tokens (text, prefill, TPOT)", run);
