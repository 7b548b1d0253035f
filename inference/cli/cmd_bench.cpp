// cubeforge-gen bench: the CUDA GPT engine on synthetic weights of the real shapes (gpt_synthetic.h), no checkpoint
// needed. Prints prefill, TPOT (mean/p50/p99, CUDA events), GPT stage per object, graph capture, VRAM, achieved
// bandwidth vs a device-to-device copy measured in the same run, and TPOT per batch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "gpt_synthetic.h"
#include "stats_util.h"

namespace {

using cubeforge::cli::fnv1a;
using cubeforge::cli::percentile;
using namespace cubeforge::cli::gpt_bench;

#ifdef CUBEFORGE_HAVE_CUDA
using namespace cubeforge;
using namespace cubeforge::cuda;

int run_bench(int argc, char** argv) {
  const char* usage =
      "usage: cubeforge-gen bench --synthetic v0.1|v0.5|tiny [--batches 1,2,4,8] [--steps-per-graph K] [--seed S]\n"
      "                           [--no-pdl] [--variant BITS] [--reps R] [--quick] [--copy-mb MB]\n"
      "                           [--batch-top-p P]   (batch runs sample with top-p P, as variations do)\n"
      "                           [--tokens N] [--cond-len S]   (override the preset's tokens / conditioning length)\n";
  BenchArgs a;
  if (!parse_args(argc, argv, a, usage)) return 0;
  std::string why;
  if (!cuda_available(&why)) {
    std::fprintf(stderr, "bench: the CUDA backend cannot run here: %s\n", why.c_str());
    return 1;
  }
  const Preset pr = make_preset(a.preset, a);
  const int maxP = *std::max_element(a.batches.begin(), a.batches.end());
  const double copy_bw = measure_copy_bandwidth((size_t)std::max(1, a.copy_mb) << 20);
  std::printf("device: %s\n", why.c_str());
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", copy_bw / 1e9);
  EngineOptions eo;
  eo.pdl = a.pdl;
  eo.variant = a.variant;
  auto t0 = std::chrono::steady_clock::now();
  auto eng = CudaGptEngine::create(pr.cfg, pr.N, pr.s, synthetic_weights(a.seed), 2 * std::max(1, maxP), eo);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("engine: preset %s, N %d, s %d, rows up to %d, load %.1f s, VRAM %.2f GiB (weights %.2f GiB)\n",
              a.preset.c_str(), pr.N, pr.s, 2 * maxP, load_s, eng->vram_bytes() / 1073741824.0,
              eng->weight_bytes() / 1073741824.0);

  GenerateOptions g;
  g.steps_per_graph = a.steps_per_graph;
  struct Row {
    std::string name;
    double prefill_ms, step0_ms, tpot_ms, p50, p99, object_ms, capture_ms, bw_pct;
  };
  std::vector<Row> rows;
  auto cond1 = synthetic_cond(1, pr.s, a.seed);
  const double bytes1 = eng->decode_bytes_per_step(2, SingleBlockAttention::Reference);
  auto do_run = [&](const std::string& name, const GenerateOptions& o, int P, double bytes) {
    auto cond = synthetic_cond(P, pr.s, a.seed);
    const double pre = eng->prefill(cond.data(), 2 * P, true);
    GenerateStats st;
    auto toks = eng->generate(o, &st);
    const double tpot = st.decode_ms / (pr.N - 1);
    const std::vector<double> chunk_ms(st.chunk_ms.begin(), st.chunk_ms.end());
    Row r{name, pre, st.step0_ms, tpot, percentile(chunk_ms, 0.5), percentile(chunk_ms, 0.99),
          pre + st.step0_ms + st.decode_ms, st.capture_ms, bytes / (tpot * 1e-3) / copy_bw * 100.0};
    std::printf("%-34s prefill %.2f ms + step0 %.3f ms, TPOT %.4f ms (p50 %.4f p99 %.4f per %s), object %.1f ms, "
                "capture %.0f ms, wall %.1f ms, bw %.0f%% of copy; tokens[0..3] %d %d %d %d, digest %016llx\n",
                name.c_str(), pre, st.step0_ms, tpot, r.p50, r.p99, st.steps_per_chunk == 1 ? "step" : "chunk",
                r.object_ms, st.capture_ms, st.wall_ms, r.bw_pct, toks[0], toks[1], toks[2], toks[3],
                (unsigned long long)fnv1a(toks));
    std::fflush(stdout);
    rows.push_back(r);
    return toks;
  };
  // warm-up (captures the graphs), then timed runs
  do_run("warm-up (graph capture)", g, 1, bytes1);
  std::vector<int32_t> first;
  std::vector<unsigned> first_hashes;
  for (int i = 0; i < a.reps; ++i) {
    auto t = do_run("greedy B1 K=" + std::to_string(g.steps_per_graph), g, 1, bytes1);
    std::vector<std::string> knames;
    const auto hashes = eng->diag_output_hashes(&knames);  // variant bit 24 only
    if (first.empty()) {
      first = t;
      first_hashes = hashes;
    } else if (t != first) {
      const size_t k = first_difference(t, first);
      std::printf("WARNING: greedy tokens differ between runs (first at token %zu of %zu: %d vs %d)\n", k, t.size(),
                  k < t.size() ? t[k] : -1, k < first.size() ? first[k] : -1);
    }
    const HashLogView run(hashes, knames, pr.N);
    if (!hashes.empty() && hashes != first_hashes) print_hash_difference(run, HashLogView(first_hashes, knames, pr.N));
    check_mlp_words(run, pr.N);
  }
  {
    GenerateOptions o = g;
    o.steps_per_graph = 1;
    do_run("greedy B1 K=1 (per-step events)", o, 1, bytes1);
  }
  if (!a.quick) {
    GenerateOptions o = g;
    o.use_graph = false;
    do_run("greedy B1 eager", o, 1, bytes1);
    o = g;
    o.attention = SingleBlockAttention::Causal;
    do_run("greedy B1 causal single block", o, 1, eng->decode_bytes_per_step(2, SingleBlockAttention::Causal));
    o = g;
    o.top_p = 0.9f;
    o.seed = 42;
    auto t1 = do_run("top-p 0.9 B1", o, 1, bytes1);
    auto t2 = do_run("top-p 0.9 B1 (same seed)", o, 1, bytes1);
    o.seed = 43;
    auto t3 = do_run("top-p 0.9 B1 (seed 43)", o, 1, bytes1);
    std::printf("top-p: same seed reproduces: %s; other seed differs: %s\n", t1 == t2 ? "yes" : "NO",
                t1 != t3 ? "yes" : "NO");
  }
  std::vector<std::pair<int, double>> batch_tpot;
  GenerateOptions gb = g;
  if (a.batch_top_p > 0) {
    gb.top_p = a.batch_top_p;
    gb.seed = 7;
  }
  const std::string bname = a.batch_top_p > 0 ? "top-p B" : "greedy B";
  for (int P : a.batches) {
    const double by = eng->decode_bytes_per_step(2 * P, SingleBlockAttention::Reference);
    do_run(bname + std::to_string(P) + " (warm)", gb, P, by);
    do_run(bname + std::to_string(P), gb, P, by);
    batch_tpot.push_back({P, rows.back().tpot_ms});
  }
  // summary
  const Row& best = rows[1];
  std::printf("\n== summary: %s on %s ==\n", a.preset.c_str(), eng->device_name().c_str());
  std::printf("| metric | value |\n|---|---|\n");
  std::printf("| prefill (cond stream, s=%d, cuBLAS) | %.2f ms |\n", pr.s, best.prefill_ms);
  std::printf("| step 0 (BOS through the decode kernels) | %.3f ms |\n", best.step0_ms);
  double tp = 0;
  for (int i = 1; i <= a.reps; ++i) tp += rows[i].tpot_ms;
  tp /= a.reps;
  std::printf("| TPOT mean, B1 (CFG rows 2), graphs of %d steps | %.4f ms (runs:", g.steps_per_graph, tp);
  for (int i = 1; i <= a.reps; ++i) std::printf(" %.4f", rows[i].tpot_ms);
  std::printf(") |\n");
  const Row& k1 = rows[a.reps + 1];
  std::printf("| TPOT per step (graph of 1 step): mean / p50 / p99 | %.4f / %.4f / %.4f ms |\n", k1.tpot_ms, k1.p50,
              k1.p99);
  std::printf("| GPT stage per object (prefill + %d steps) | %.1f ms |\n", pr.N, best.object_ms);
  std::printf("| graph capture + instantiate (K and 1-step graphs) | %.0f ms |\n", rows[0].capture_ms);
  std::printf("| VRAM (weights + KV for %d rows + scratch) | %.2f GiB |\n", 2 * maxP, eng->vram_bytes() / 1073741824.0);
  std::printf("| bytes per step (weights touched + mean KV prefix) | %.3f GB |\n", bytes1 / 1e9);
  std::printf("| achieved bandwidth | %.0f GB/s = %.0f%% of copy %.0f GB/s (floor %.4f ms) |\n",
              bytes1 / (tp * 1e-3) / 1e9, bytes1 / (tp * 1e-3) / copy_bw * 100, copy_bw / 1e9, bytes1 / copy_bw * 1e3);
  for (auto& b : batch_tpot)
    std::printf("| TPOT batch %d (%d rows)%s | %.4f ms (%.3fx B1) |\n", b.first, 2 * b.first,
                a.batch_top_p > 0 ? ", top-p" : "", b.second, b.second / batch_tpot.front().second);
  return 0;
}
#endif

int cmd_bench(int argc, char** argv) {
#ifdef CUBEFORGE_HAVE_CUDA
  return run_bench(argc, argv);
#else
  BenchArgs a;
  if (!parse_args(argc, argv, a, "usage: cubeforge-gen bench --synthetic v0.1|v0.5|tiny\n")) return 0;
  std::fprintf(stderr, "bench: this build has no CUDA backend (nvcc was not found at configure time); "
                       "the GPU benchmark needs a CUDA build\n");
  return 1;
#endif
}

}  // namespace

CUBEFORGE_COMMAND("bench", "GPU benchmark of the GPT stage on synthetic weights (--synthetic v0.1|v0.5)", cmd_bench);
