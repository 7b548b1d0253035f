// Definitions for gpt_synthetic.h: option parsing, presets, synthetic weights / conditioning, run comparisons.
#include "gpt_synthetic.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace cubeforge::cli::gpt_bench {

namespace {
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
#ifdef CUBEFORGE_HAVE_CUDA
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
#endif
}  // namespace

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
using namespace cubeforge::cuda;

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
std::vector<float> synthetic_cond(int P, int s, uint64_t seed) {
  std::vector<float> one((size_t)s * 1536), un((size_t)s * 1536);
  fill_uniform(one, mix64(seed * 7 + 1), 0.f, 1.7320508f);
  fill_uniform(un, mix64(seed * 7 + 2), 0.f, 1.7320508f);
  std::vector<float> c;
  for (int p = 0; p < P; ++p) c.insert(c.end(), one.begin(), one.end());
  for (int p = 0; p < P; ++p) c.insert(c.end(), un.begin(), un.end());
  return c;
}
size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  return (size_t)(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
}


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
#endif

}  // namespace cubeforge::cli::gpt_bench
