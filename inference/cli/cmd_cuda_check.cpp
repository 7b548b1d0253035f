// cubeforge-gen cuda-check: teacher-forced per-step logits of the CUDA GPT engine on synthetic weights
// (gpt_synthetic.h) against a plain fp32 GPU reference (test code, cuda_gpt.h), with the digests, graph = eager,
// batch = single, variations = single seeds, cancellation and repeatability checks.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "gpt_synthetic.h"
#include "stats_util.h"
#ifdef CUBEFORGE_HAVE_CUDA
#include "cubeforge/error.h"
#endif

namespace {

using namespace cubeforge::cli::gpt_bench;
using cubeforge::cli::fnv1a;

#ifdef CUBEFORGE_HAVE_CUDA
using namespace cubeforge;
using namespace cubeforge::cuda;

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

CUBEFORGE_COMMAND("cuda-check", "teacher-forced logits of the CUDA GPT vs an fp32 GPU reference", cmd_cuda_check);
