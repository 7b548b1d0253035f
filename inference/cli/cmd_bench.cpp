// cubeforge-gen bench / cuda-check: the CUDA GPT engine on synthetic weights of the real shapes (seeded, never
// zeros), no checkpoint needed. bench prints prefill, TPOT (mean/p50/p99, CUDA events), GPT stage per object,
// graph capture, VRAM, achieved bandwidth vs a device-to-device copy measured in the same run, and TPOT per batch.
// cuda-check compares teacher-forced per-step logits with a plain fp32 GPU reference (test code, cuda_gpt.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "cubeforge/model_config.h"
#include "stats_util.h"
#ifdef CUBEFORGE_HAVE_CUDA
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/error.h"
#endif

namespace {

using cubeforge::cli::fnv1a;

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

std::vector<int> int_list(const std::string& v) {  // "1,2,4"
  std::vector<int> out;
  size_t p = 0;
  while (p < v.size()) {
    size_t q = v.find(',', p);
    if (q == std::string::npos) q = v.size();
    out.push_back(std::atoi(v.substr(p, q - p).c_str()));
    p = q + 1;
  }
  return out;
}

bool parse_args(int argc, char** argv, BenchArgs& a, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n%s", k.c_str(), usage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--synthetic") a.preset = val();
    else if (k == "--batches") a.batches = int_list(val()); else if (k == "--steps-per-graph") a.steps_per_graph = std::atoi(val().c_str());
    else if (k == "--seed") a.seed = std::strtoull(val().c_str(), nullptr, 10);
    else if (k == "--no-pdl") a.pdl = false;
    else if (k == "--variant") a.variant = std::atoi(val().c_str());
    else if (k == "--reps") a.reps = std::atoi(val().c_str());
    else if (k == "--quick") a.quick = true;
    else if (k == "--copy-mb") a.copy_mb = std::atoi(val().c_str());
    else if (k == "--batch-top-p") a.batch_top_p = std::strtof(val().c_str(), nullptr);
    else if (k == "--attribute") a.attribute = int_list(val());
    else if (k == "--tokens") a.tokens = std::atoi(val().c_str());
    else if (k == "--cond-len") a.cond_len = std::atoi(val().c_str());
    else if (k == "--help" || k == "-h") {
      std::printf("%s", usage);
      return false;
    } else {
      std::fprintf(stderr, "unknown option %s\n%s", k.c_str(), usage);
      std::exit(2);
    }
  }
  if (a.preset != "v0.1" && a.preset != "v0.5" && a.preset != "tiny" && a.preset != "micro1" && a.preset != "micro2") {
    std::fprintf(stderr, "--synthetic must be v0.1, v0.5, tiny, micro1 or micro2\n");
    std::exit(2);
  }
  for (int b : a.batches)
    if (b < 1 || b > 8) {
      std::fprintf(stderr, "--batches: each in 1..8\n");
      std::exit(2);
    }
  return true;
}

#ifdef CUBEFORGE_HAVE_CUDA
using namespace cubeforge;
using namespace cubeforge::cuda;

struct Preset {
  GptConfig cfg;
  int N = 512, s = 77;
};
Preset make_preset(const std::string& name, const BenchArgs& a) {
  Preset p;
  if (name == "v0.5") {
    p.cfg.use_bbox = true;
    p.N = 1024;
    p.s = 78;
  } else if (name == "tiny") {  // real widths, 3 blocks, 32 tokens: quick runs and compute-sanitizer
    p.cfg.n_layer = 3;
    p.N = 32;
  } else if (name == "micro1" || name == "micro2") {  // 1 or 2 dual blocks, 4 tokens: localising differences
    p.cfg.n_layer = name == "micro1" ? 1 : 2;
    p.N = 4;
  }
  if (a.tokens > 0) p.N = a.tokens;
  if (a.cond_len > 0) p.s = a.cond_len;
  return p;
}

uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint64_t hash_name(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return mix64(h);
}
// Uniform in [-a, a] (never exactly zero in bulk), from a counter hash: the same name gives the same tensor.
void fill_uniform(std::vector<float>& v, uint64_t key, float center, float a) {
  const size_t n = v.size();
  const unsigned nt = n > (1u << 20) ? std::max(1u, std::min(16u, std::thread::hardware_concurrency())) : 1u;
  std::vector<std::thread> th;
  for (unsigned t = 0; t < nt; ++t)
    th.emplace_back([&, t]() {
      const size_t b = n * t / nt, e = n * (t + 1) / nt;
      for (size_t i = b; i < e; ++i) {
        const uint64_t r = mix64(key + i);
        const float u = (float)((r >> 40) * (1.0 / 16777216.0)) * 2.f - 1.f;
        // the product rounded on its own: a build with FMA contraction (build_cuda_shape.sh's -march=x86-64-v3)
        // would otherwise make other weights, and every digest would differ from build_cuda_gpt.sh's (session 23)
        const volatile float au = a * u;
        v[i] = center + au;
      }
    });
  for (auto& x : th) x.join();
}

GptWeightSource synthetic_weights(uint64_t seed) {
  GptWeightSource src;
  src.get = [seed](const std::string& name, const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (auto d : shape) n *= (size_t)d;
    std::vector<float> v(n);
    const uint64_t key = hash_name(name, seed);
    const float sq3 = 1.7320508f;
    if (name.find("norm.weight") != std::string::npos) fill_uniform(v, key, 1.0f, 0.1f);
    else if (name == "transformer.wte.weight") fill_uniform(v, key, 0.0f, 0.5f * sq3);
    else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) fill_uniform(v, key, 0.0f, 0.02f);
    else fill_uniform(v, key, 0.0f, 0.02f * sq3);
    return v;
  };
  return src;
}

// cond for P variations of one prompt: rows [0,P) the prompt, [P,2P) the unconditional cond (std 1).
std::vector<float> synthetic_cond(int P, int s, uint64_t seed) {
  std::vector<float> one((size_t)s * 1536), un((size_t)s * 1536);
  fill_uniform(one, mix64(seed * 7 + 1), 0.f, 1.7320508f);
  fill_uniform(un, mix64(seed * 7 + 2), 0.f, 1.7320508f);
  std::vector<float> c;
  for (int p = 0; p < P; ++p) c.insert(c.end(), one.begin(), one.end());
  for (int p = 0; p < P; ++p) c.insert(c.end(), un.begin(), un.end());
  return c;
}

// Index of the first token where two generations differ (the shorter length if one is a prefix of the other).
size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  return (size_t)(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
}

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
void print_hash_difference(const HashLogView& run, const HashLogView& ref) {
  if (!run.usable() || run.h.size() != ref.h.size()) return;
  const auto same = [&](size_t e) {
    return std::equal(run.h.begin() + e, run.h.begin() + e + run.W, ref.h.begin() + e);
  };
  for (size_t e = 0; e < run.h.size(); e += run.W) {
    if (same(e)) continue;
    const size_t pos = e / (run.K * run.W), k = (e / run.W) % run.K;
    std::string words;
    for (size_t w = 0; w < run.W; ++w)
      if (run.h[e + w] != ref.h[e + w]) words += (words.empty() ? "" : ",") + std::to_string(w);
    int n = 0;
    for (size_t j = 0; j < run.K; ++j) n += !same(run.entry(pos, j));
    std::printf("HASHES: first differing output at step %zu, kernel %zu (%s) of the step, words %s; %d kernels "
                "differ at that step\n", pos, k, pos == 0 ? "step 0" : run.names[k].c_str(), words.c_str(), n);
    return;
  }
}

// Within one run, per fused-MLP launch: the weights it took from its rings (words 5: gate/up stages requested before
// the wait, 6: the other gate/up stages, 7: the down-proj) are the same in every step: how many launches differ.
void check_mlp_words(const HashLogView& run, int num_tokens) {
  if (!run.usable() || run.W < 8) return;
  int nbad[8] = {};
  std::string where[8];
  for (size_t k = 0; k < run.K; ++k) {
    if (run.names[k].find("mlp") == std::string::npos) continue;
    for (size_t pos = 2; pos < (size_t)num_tokens; ++pos)
      for (int w : {5, 6, 7})
        if (run.h[run.entry(pos, k) + w] != run.h[run.entry(1, k) + w] && !nbad[w]++)
          where[w] = " (first at step " + std::to_string(pos) + " kernel " + std::to_string(k) + ")";
  }
  std::printf("HASHES: MLP launches whose weights differ from step 1's: gate/up stages requested before the wait "
              "%d%s, other gate/up stages %d%s, down-proj %d%s\n", nbad[5], where[5].c_str(), nbad[6],
              where[6].c_str(), nbad[7], where[7].c_str());
}

double pct(std::vector<float> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, (size_t)std::floor(q * (v.size() - 1) + 0.5));
  return v[i];
}

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
    Row r{name, pre, st.step0_ms, tpot, pct(st.chunk_ms, 0.5), pct(st.chunk_ms, 0.99),
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

struct Cmp {
  double num = 0, den = 0, max_step = 0;
  int agree = 0, steps = 0;
};

int run_check(int argc, char** argv) {
  const char* usage =
      "usage: cubeforge-gen cuda-check --synthetic v0.1|v0.5|tiny|micro1|micro2 [--seed S] [--no-pdl] [--variant BITS]\n"
      "                                [--attribute BITS,BITS,...]   (also teacher-force engines of these variants)\n"
      "                                [--tokens N] [--cond-len S]   (the preset's tokens / conditioning length)\n";
  BenchArgs a;
  if (!parse_args(argc, argv, a, usage)) return 0;
  std::string why;
  if (!cuda_available(&why)) {
    std::fprintf(stderr, "cuda-check: the CUDA backend cannot run here: %s\n", why.c_str());
    return 1;
  }
  const Preset pr = make_preset(a.preset, a);
  const int N = pr.N, s = pr.s, Vs = pr.cfg.shape_model_vocab_size;
  const float g = 3.0f;
  EngineOptions eo;
  eo.pdl = a.pdl;
  eo.variant = a.variant;
  auto src = synthetic_weights(a.seed);
  auto eng = CudaGptEngine::create(pr.cfg, N, s, src, 16, eo);
  auto cond = synthetic_cond(1, s, a.seed);
  int failures = 0;

  eng->prefill(cond.data(), 2, true);
  GenerateOptions go;
  auto tokens = eng->generate(go);  // greedy, reference single block: the teacher-forced sequence
  std::printf("engine greedy tokens[0..7]: %d %d %d %d %d %d %d %d\n", tokens[0], tokens[1], tokens[2], tokens[3],
              tokens[4], tokens[5], tokens[6], tokens[7]);
  std::printf("digest: greedy tokens %016llx\n", fnv1a(tokens));

  auto engine_logits = [&](SingleBlockAttention mode, bool graph, int steps, std::vector<int32_t>* am) {
    eng->prefill(cond.data(), 2, true);
    std::vector<float> all;
    for (int k = 0; k < steps; ++k) {
      std::vector<int32_t> a1;
      auto l = eng->step_logits({tokens[k]}, g, mode, graph, &a1);
      all.insert(all.end(), l.begin(), l.end());
      if (am) am->push_back(a1[0]);
    }
    return all;  // [steps][2][Vs]
  };
  auto guided_argmax = [&](const float* lc, const float* lu, int k) {
    const double gd = (double)g * (N - k) / N;
    const float g1 = (float)(1.0 + gd), gm = (float)gd;
    float best = -INFINITY;
    int bi = 0;
    for (int v = 0; v < Vs; ++v) {
      volatile float p1 = g1 * lc[v];
      volatile float p2 = gm * lu[v];
      const float x = p1 - p2;
      if (x > best) {
        best = x;
        bi = v;
      }
    }
    return bi;
  };
  testing::Fp32Reference ref(pr.cfg, N, s, src);
  std::vector<float> rl0;  // pass 0's reference logits (fp32 weights, reference single block)
  for (int pass = 0; pass < 3; ++pass) {
    const SingleBlockAttention mode = pass == 1 ? SingleBlockAttention::Causal : SingleBlockAttention::Reference;
    if (pass == 2) ref.round_weights_to_bf16();
    std::vector<int32_t> eam;
    auto el = engine_logits(mode, true, N, &eam);
    if (pass < 2)
      std::printf("digest: teacher-forced logits, single block %s: %016llx\n",
                  mode == SingleBlockAttention::Causal ? "causal" : "reference", fnv1a(el));
    auto rl = ref.forward(cond.data(), 2, true, tokens, N, mode);  // [2][N][Vs]
    if (pass == 0) rl0 = rl;
    Cmp c;
    int raw_agree = 0;
    for (int k = 0; k < N; ++k) {
      double num = 0, den = 0;
      for (int r = 0; r < 2; ++r) {
        const float* e = el.data() + ((size_t)k * 2 + r) * Vs;
        const float* f = rl.data() + ((size_t)r * N + k) * Vs;
        for (int v = 0; v < Vs; ++v) {
          const double d = (double)e[v] - f[v];
          num += d * d;
          den += (double)f[v] * f[v];
        }
        int ea = 0, fa = 0;
        for (int v = 1; v < Vs; ++v) {
          if (e[v] > e[ea]) ea = v;
          if (f[v] > f[fa]) fa = v;
        }
        raw_agree += ea == fa;
      }
      if (k < 3 || k == N - 1) std::printf("  step %d: rel L2 %.3e\n", k, std::sqrt(num / den));
      c.num += num;
      c.den += den;
      c.max_step = std::max(c.max_step, std::sqrt(num / den));
      const int ra = guided_argmax(rl.data() + (size_t)k * Vs, rl.data() + ((size_t)N + k) * Vs, k);
      c.agree += (ra == eam[k]);
      ++c.steps;
    }
    const double rel = std::sqrt(c.num / c.den);
    std::printf("teacher-forced %d steps, single block %s, reference %s: logits rel L2 error %.3e (worst step %.3e), "
                "guided greedy agreement %d/%d (%.1f%%), raw-row argmax agreement %.1f%%\n",
                N, mode == SingleBlockAttention::Causal ? "causal" : "reference(slot 0)",
                pass == 2 ? "fp32 math on bf16-rounded weights" : "fp32 weights + math", rel, c.max_step, c.agree,
                c.steps, 100.0 * c.agree / c.steps, 100.0 * raw_agree / (2.0 * N));
    if (!(rel < 2e-2)) {
      std::printf("FAIL: relative error above 2e-2\n");
      ++failures;
    }
    if (pass == 0) {
      int same = 0;
      for (int k = 0; k < N; ++k) same += eam[k] == tokens[k];
      std::printf("engine teacher-forced argmax == its own generate() tokens: %d/%d\n", same, N);
      if (same != N) ++failures;
    }
  }
  // error attribution: other engine variants (e.g. bit 4 = decode operands bf16 only, bit 5 = prefill operands bf16
  // only) teacher-forced on the same tokens against pass 0's reference; informational, no pass/fail.
  for (int v : a.attribute) {
    EngineOptions ev = eo;
    ev.variant = v;
    ev.verbose = false;
    auto e2 = CudaGptEngine::create(pr.cfg, N, s, src, 2, ev);
    e2->prefill(cond.data(), 2, true);
    double num = 0, den = 0, worst = 0;
    int agree = 0;
    for (int k = 0; k < N; ++k) {
      std::vector<int32_t> a1;
      auto l = e2->step_logits({tokens[k]}, g, SingleBlockAttention::Reference, true, &a1);
      double n1 = 0, d1 = 0;
      for (int r = 0; r < 2; ++r)
        for (int u = 0; u < Vs; ++u) {
          const double f = rl0[((size_t)r * N + k) * Vs + u], d = (double)l[(size_t)r * Vs + u] - f;
          n1 += d * d;
          d1 += f * f;
        }
      num += n1;
      den += d1;
      worst = std::max(worst, std::sqrt(n1 / d1));
      agree += guided_argmax(rl0.data() + (size_t)k * Vs, rl0.data() + ((size_t)N + k) * Vs, k) == a1[0];
    }
    std::printf("attribution: variant %d vs fp32 reference (reference single block): logits rel L2 error %.3e "
                "(worst step %.3e), guided greedy agreement %d/%d\n", v, std::sqrt(num / den), worst, agree, N);
  }
  // eager vs graph: bitwise
  {
    const int T = std::min(N, 64);
    auto a1 = engine_logits(SingleBlockAttention::Reference, true, T, nullptr);
    auto a2 = engine_logits(SingleBlockAttention::Reference, false, T, nullptr);
    const bool same = a1 == a2;
    std::printf("graph vs eager logits over %d steps: %s\n", T, same ? "bitwise identical" : "DIFFERENT");
    if (!same) ++failures;
  }
  // batch 8 (16 rows, M16 GEMV path) vs batch 1 with identical prompts. The decode kernels are row-independent;
  // the cuBLAS prefill may pick other GEMM kernels for 16 rows, so the comparison is by tolerance (bitwise noted).
  {
    const int T = std::min(N, 24);
    auto a1 = engine_logits(SingleBlockAttention::Reference, true, T, nullptr);
    auto c8 = synthetic_cond(8, s, a.seed);
    eng->prefill(c8.data(), 16, true);
    double num = 0, den = 0;
    bool bitwise = true;
    std::vector<float> all8;
    for (int k = 0; k < T; ++k) {
      auto l = eng->step_logits(std::vector<int32_t>(8, tokens[k]), g, SingleBlockAttention::Reference, true);
      all8.insert(all8.end(), l.begin(), l.end());
      for (int p = 0; p < 8; ++p)
        for (int half = 0; half < 2; ++half) {
          const float* x = l.data() + (size_t)(half * 8 + p) * Vs;
          const float* y = a1.data() + ((size_t)k * 2 + half) * Vs;
          for (int v = 0; v < Vs; ++v) {
            num += ((double)x[v] - y[v]) * ((double)x[v] - y[v]);
            den += (double)y[v] * y[v];
            bitwise = bitwise && x[v] == y[v];
          }
        }
    }
    const double rel = std::sqrt(num / den);
    std::printf("batch 8 (16 rows) vs batch 1 logits over %d steps: rel diff %.3e (%s)\n", T, rel,
                bitwise ? "bitwise identical" : "not bitwise");
    std::printf("digest: batch 8 logits over %d steps: %016llx\n", T, fnv1a(all8));
    if (!(rel < 2e-3)) ++failures;
  }
  // Top-p variations (the editor's "variations"): 4 variations of one prompt decoded as one batch with seed S must be
  // the single generations of seeds S..S+3, token for token, and differ from each other.
  {
    const int P = 4;
    GenerateOptions o;
    o.guidance = g;
    o.top_p = 0.9f;
    o.seed = 1234;
    eng->prefill(variation_rows(cond, 2, P).data(), 2 * P, true);
    const auto batch = eng->generate(o);
    int equal = 0, distinct = 0;
    for (int p = 0; p < P; ++p) {
      eng->prefill(cond.data(), 2, true);
      GenerateOptions one = o;
      one.seed = o.seed + p;
      const auto t = eng->generate(one);
      equal += std::equal(t.begin(), t.begin() + N, batch.begin() + (size_t)p * N);
      distinct += p > 0 && !std::equal(batch.begin(), batch.begin() + N, batch.begin() + (size_t)p * N);
    }
    std::printf("top-p variations: %d in one batch (seed %llu) vs single generations of seeds %llu..%llu: %d/%d equal, "
                "%d/%d differ from variation 0\n", P, (unsigned long long)o.seed, (unsigned long long)o.seed,
                (unsigned long long)o.seed + P - 1, equal, P, distinct, P - 1);
    std::printf("digest: top-p variations tokens %016llx\n", fnv1a(batch));
    if (equal != P || distinct != P - 1) ++failures;
  }
  // cancellation + streaming callback
  if (N >= 128) {
    eng->prefill(cond.data(), 2, true);
    std::atomic<bool> cancel{false};
    int seen = 0;
    GenerateOptions o;
    o.cancel = &cancel;
    o.on_token = [&](int i, int, int32_t, double) {
      ++seen;
      if (i >= 40) cancel = true;
    };
    bool threw = false;
    try {
      eng->generate(o);
    } catch (const cubeforge::Cancelled&) {
      threw = true;
    }
    GenerateOptions o2;
    int streamed = 0;
    bool ordered = true;
    o2.on_token = [&](int i, int, int32_t t, double) {
      ordered = ordered && i == streamed && t == tokens[i];
      ++streamed;
    };
    auto again = eng->generate(o2);
    std::printf("cancel: %s after %d streamed tokens; next generate streams %d tokens in order and equal: %s\n",
                threw ? "stopped" : "NOT STOPPED", seen, streamed, (ordered && again == tokens) ? "yes" : "NO");
    if (!threw || !ordered || again != tokens || streamed != N) ++failures;
  }
  // repeatability: the same prompt and settings give the same greedy tokens in every generate (session 21 found
  // configurations where they do not: docs/cuda-gpt.md; e.g. --synthetic v0.1 --cond-len 78)
  {
    constexpr int kRepeats = 6;
    int same = 0;
    long first_diff = -1;  // of the first generation that differs
    for (int i = 0; i < kRepeats; ++i) {
      eng->prefill(cond.data(), 2, true);
      const auto t = eng->generate(GenerateOptions{});
      if (t == tokens) {
        ++same;
      } else if (first_diff < 0) {
        first_diff = (long)first_difference(t, tokens);
      }
    }
    std::printf("repeat: %d/%d greedy generations equal to the first", same, kRepeats);
    if (first_diff >= 0) std::printf(" (first difference at token %ld)", first_diff);
    std::printf("\n");
    if (same != kRepeats) ++failures;
  }
  std::printf("cuda-check: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
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
int cmd_cuda_check(int argc, char** argv) {
#ifdef CUBEFORGE_HAVE_CUDA
  return run_check(argc, argv);
#else
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "cuda-check: this build has no CUDA backend\n");
  return 1;
#endif
}

}  // namespace

CUBEFORGE_COMMAND("bench", "GPU benchmark of the GPT stage on synthetic weights (--synthetic v0.1|v0.5)", cmd_bench);
CUBEFORGE_COMMAND("cuda-check", "teacher-forced logits of the CUDA GPT vs an fp32 GPU reference", cmd_cuda_check);
