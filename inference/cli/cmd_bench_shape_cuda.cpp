// `cubeforge-gen bench-shape-gpu`: the CUDA shape stage (cuda_shape.h, issue 8) on random weights of the real
// shapes built in memory (seeded, never zeros). --check compares with the CPU fp32 path (latents, occupancy logits of
// arbitrary points, grid points and a truncated latent set; device grids and marching cubes against grid.h /
// marching_cubes.h on analytic fields; dense vs adaptive meshes). The bench prints latent decode, occupancy points/s,
// dense and adaptive grids (adaptive timed on the point sets analytic shapes select, the network run on exactly those
// points), marching cubes and tokens → mesh at several rb, two runs each, CUDA events.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "arg_lists.h"
#include "command.h"
#include "gpt_synthetic.h"
#include "stats_util.h"
#include "cubeforge/model_config.h"
#ifdef CUBEFORGE_HAVE_CUDA
#include "cubeforge/analytic_fields.h"
#include "cubeforge/cuda_gpt.h"
#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "cubeforge/generation.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_metrics.h"
#include "cubeforge/safetensors_writer.h"
#include "cubeforge/shape_model.h"
#endif

namespace {

#ifdef CUBEFORGE_HAVE_CUDA
const char* kUsage =
    "usage: cubeforge-gen bench-shape-gpu [options]\n"
    "  --synthetic LIST   comma list of v0.1, v0.5, small, default (the default model's shape: width 192,\n"
    "                     head_dim 32), tiny (width 32, head_dim 8), hd16 (width 80), hd128 (width 512)\n"
    "                     (default v0.1,v0.5)\n"
    "  --rb LIST          resolution bases of the tokens->mesh table (default 7,8,9)\n"
    "  --reps N           runs per row (default 2; the table shows each run)\n"
    "  --check            compare with the CPU fp32 path first (writes a temporary safetensors file)\n"
    "  --check-only       the checks, no bench\n"
    "  --no-dense         skip the dense grids above rb 8\n"
    "  --coarse-rb N      adaptive: fully evaluated level (default 5)\n"
    "  --margin X         adaptive margin on analytic shapes, world units (default 0.02)\n"
    "  --chunk N          points per network pass (default 131072)\n"
    "  --exact-gelu       erf GELU kernel instead of the cuBLASLt GELU epilogue\n"
    "  --seed N           weight seed (default 1)\n"
    "  --e2e              prompt -> mesh: CUDA GPT decode (random weights of the real shapes, cuda_gpt.h) + shape\n"
    "                     stage in one process, and the GPT's TPOT with live previews on the shape engine's stream\n"
    "  --e2e-only         only that\n"
    "  --e2e-rows N       batch rows the GPT engine is created for (default 8, as in the editor: 4 variations\n"
    "                     with guidance); the decode is one prompt either way\n"
    "  --e2e-weights W    the GPT's random weights and conditioning: init (default; matrices ~ N(0, 0.02) like the\n"
    "                     reference's init) or bench (those of `cubeforge-gen bench --synthetic`, to compare the\n"
    "                     two decodes on the same values)\n"
    "  --e2e-decodes N    the e2e's decode only (implies --e2e-only): N decodes back to back, each with its TPOT,\n"
    "                     no shape stage, no previews (to compare it with the GPT bench's decode)\n"
    "  --e2e-no-shape-engine  with --e2e-decodes: no shape engine in the process (its memory and its stream absent)\n"
    "  --e2e-shape-rb R   with --e2e-decodes: the shape stage at rb R (as in the e2e rows) before each decode\n"
    "  --e2e-idle-ms T    with --e2e-decodes: the host sleeps T ms before each decode (after the shape stage)\n";

using namespace cubeforge;
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Args {
  std::vector<std::string> presets{"v0.1", "v0.5"};
  std::vector<int> rbs{7, 8, 9};
  int reps = 2, coarse_rb = 5;
  bool check = false, check_only = false, no_dense = false, exact_gelu = false, e2e = false, e2e_only = false;
  int e2e_rows = 2 * cuda::kGpuVariations;  // the editor's CUDA token backend's rows: its variations with guidance
  float margin = 0.02f;
  size_t chunk = size_t(1) << 17;
  uint64_t seed = 1;
  bool e2e_bench_weights = false;  // --e2e-weights bench
  int e2e_decodes = 0;             // --e2e-decodes N: decodes only (no shape stage, no previews), N of them
  bool e2e_shape_engine = true;    // --e2e-no-shape-engine: with --e2e-decodes, no shape engine in the process
  int e2e_shape_rb = 0;            // --e2e-shape-rb R: with --e2e-decodes, the shape stage at rb R before each decode
  int e2e_idle_ms = 0;             // --e2e-idle-ms T: with --e2e-decodes, T ms of host sleep before each decode
};


ShapeConfig preset_config(const std::string& name) {
  ShapeConfig c;
  if (name == "v0.1") return c;
  if (name == "v0.5") {
    c.num_encoder_latents = 1024;
    return c;
  }
  if (name == "small") {  // head_dim 64 like the real model, fewer of everything
    c.width = 256;
    c.num_heads = 4;
    c.num_encoder_latents = 128;
    c.num_codes = 1024;
    c.embed_dim = 8;
    c.num_freqs = 8;
    c.num_encoder_layers = 2;
    c.encoder_cross_attention_levels = {0};
    c.num_decoder_layers = 4;
    return c;
  }
  // Other head dims and widths (the engine's templated kernels; widths not a multiple of 256 use the masked row
  // kernels): the default model's shape (width 192, head_dim 32, num_freqs 64), the golden cases' (width 32,
  // head_dim 8), head_dim 16 and head_dim 128.
  if (name == "default") {
    c.width = 192;
    c.num_heads = 6;
    c.num_encoder_latents = 64;
    c.num_codes = 1024;
    c.embed_dim = 16;
    c.num_freqs = 64;
    c.num_encoder_layers = 4;
    c.encoder_cross_attention_levels = {0, 2};
    c.num_decoder_layers = 6;
    return c;
  }
  if (name == "tiny" || name == "hd16" || name == "hd128") {
    c.width = name == "tiny" ? 32 : name == "hd16" ? 80 : 512;
    c.num_heads = name == "tiny" ? 4 : name == "hd16" ? 5 : 4;
    c.num_encoder_latents = name == "hd128" ? 96 : 16;
    c.num_codes = 128;
    c.embed_dim = 8;
    c.num_freqs = name == "hd16" ? 16 : 8;
    c.num_encoder_layers = 2;
    c.encoder_cross_attention_levels = {0};
    c.num_decoder_layers = 2;
    return c;
  }
  throw Error("--synthetic: unknown preset '" + name + "' (v0.1, v0.5, small, default, tiny, hd16, hd128)");
}

// Seeded random tensor, never zero: matrices ~ 1/sqrt(fan_in), embeddings ~ 1, norm weights 1 + 0.1 u, biases
// 0.1 u (uniform with those standard deviations: the cost of the network does not depend on the values).
std::vector<float> random_tensor(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed) {
  size_t n = 1;
  for (auto d : shape) n *= size_t(d);
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (char c : name) h = (h ^ uint8_t(c)) * 1099511628211ULL;
  auto ends = [&](const char* t) {
    const size_t k = std::strlen(t);
    return name.size() >= k && name.compare(name.size() - k, k, t) == 0;
  };
  float sd = 0, mean = 0;
  if (ends(".bias") || ends("cb_bias")) sd = 0.1f;
  else if (ends("bottleneck.block.norm.weight")) mean = 1.0f;
  else if (shape.size() == 1) mean = 1.0f, sd = 0.1f;
  else if (ends("positional_encodings") || ends("codebook.weight") || ends("encoder.query") ||
           name.find("embedder") != std::string::npos)
    sd = 1.0f;
  else sd = float(1.0 / std::sqrt(double(shape.back())));
  std::vector<float> v(n);
  const float a = sd * 1.7320508f;
  auto fill = [&](size_t b, size_t e) {  // counter-based: value i depends on (name, seed, i) only
    for (size_t i = b; i < e; ++i) {
      uint64_t z = h + (uint64_t(i) + 1) * 0x9e3779b97f4a7c15ULL;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      const float u = float(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
      v[i] = mean + a * (2.0f * u - 1.0f);
      if (v[i] == 0.0f) v[i] = 1e-3f;
    }
  };
  const size_t nt = n > (size_t(1) << 20) ? std::max(1u, std::min(16u, std::thread::hardware_concurrency())) : 1;
  std::vector<std::thread> th;
  for (size_t t = 1; t < nt; ++t) th.emplace_back(fill, n * t / nt, n * (t + 1) / nt);
  fill(0, n / nt);
  for (auto& x : th) x.join();
  return v;
}

cuda::ShapeWeightSource random_source(uint64_t seed) {
  cuda::ShapeWeightSource s;
  s.get = [seed](const std::string& name, const std::vector<int64_t>& shape) { return random_tensor(name, shape, seed); };
  return s;
}

std::vector<int> random_ids(int N, int codes, uint64_t seed) {
  std::vector<int> ids(N);
  uint64_t s = seed * 7919 + 17;
  for (auto& v : ids) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = int((s >> 33) % uint64_t(codes));
  }
  return ids;
}

double rel_l2(const float* a, const float* ref, size_t n, double* max_abs = nullptr) {
  double num = 0, den = 0, mx = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(ref[i]);
    if (!std::isfinite(a[i])) return INFINITY;
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
    mx = std::max(mx, std::fabs(d));
  }
  if (max_abs) *max_abs = mx;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

double sign_agreement(const float* a, const float* b, size_t n) {
  size_t same = 0;
  for (size_t i = 0; i < n; ++i) same += (a[i] >= 0) == (b[i] >= 0);
  return n ? double(same) / double(n) : 1.0;
}

using cubeforge::cli::median;

int failures = 0;
void verdict(const char* what, bool ok, const std::string& detail) {
  std::printf("  %-58s %s  %s\n", what, ok ? "ok  " : "FAIL", detail.c_str());
  if (!ok) ++failures;
}
std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// ---- checks ---------------------------------------------------------------------------------------------------------

void check_meshes_equal(const char* what, const Mesh& g, const Mesh& c) {
  bool topo = g.positions.size() == c.positions.size() && g.triangles == c.triangles;
  double mx = 0;
  if (g.positions.size() == c.positions.size())
    for (size_t i = 0; i < g.positions.size(); ++i)
      for (int a = 0; a < 3; ++a) mx = std::max(mx, double(std::fabs(g.positions[i][a] - c.positions[i][a])));
  verdict(what, topo && mx <= 1e-6,
          fmt("verts %.0f/%.0f, faces equal: %.0f", double(g.positions.size()), double(c.positions.size()),
              double(g.triangles == c.triangles)) +
              fmt(", max |dpos| %.2e", mx));
}

void run_grid_mc_checks(cuda::CudaShapeEngine& eng) {
  std::printf("-- device grids and marching cubes vs grid.h / marching_cubes.h (analytic fields)\n");
  struct Case {
    const char* name;
    cuda::AnalyticShape a;
    FieldFn f;
  };
  std::vector<Case> cases = {{"sphere r0.8", {cuda::AnalyticShape::Sphere, 0.8f, 0}, sphere_field(0.8f)},
                             {"torus 0.6/0.25", {cuda::AnalyticShape::Torus, 0.6f, 0.25f}, torus_field(0.6f, 0.25f)}};
  for (auto& cs : cases)
    for (int rb : {6, 8})
    for (int scaled = 0; scaled < 2; ++scaled) {  // grid.h's fixed rule, then scale_margin + final_dilation 0
      cuda::GpuGridOptions go;
      go.analytic = cs.a;
      go.network_on_analytic_points = false;
      go.margin = 0.02f;
      go.scale_margin = scaled;
      go.final_dilation = scaled ? 0 : -1;
      go.copy_evaluated_bits = true;
      cuda::GpuGridStats st;
      const GridValues gg = eng.grid(rb, go, &st);
      AdaptiveOptions ao;
      ao.margin = 0.02f;
      ao.scale_margin = scaled;
      ao.final_dilation = scaled ? 0 : -1;
      const GridValues cg = evaluate_adaptive(cs.f, rb, ao);
      double mx = 0;
      const double rel = rel_l2(gg.values.data(), cg.values.data(), cg.values.size(), &mx);
      const bool same_pts = gg.points_evaluated == cg.points_evaluated && gg.points_per_level == cg.points_per_level &&
                            gg.evaluated_bits == cg.evaluated_bits;
      std::string name = std::string("adaptive grid ") + cs.name + " rb " + std::to_string(rb) + (scaled ? " scaled" : "");
      verdict(name.c_str(), same_pts && mx < 1e-5,
              fmt("points %.0f (cpu %.0f), max |dv| %.2e", double(gg.points_evaluated), double(cg.points_evaluated), mx) +
                  fmt(", rel %.1e, %.2f ms", rel, st.ms));
      const Mesh gm = eng.marching_cubes();
      const Mesh cm = marching_cubes(gg);
      name = std::string("device MC == host MC on that grid (") + cs.name + ")";
      check_meshes_equal(name.c_str(), gm, cm);
      go.adaptive = false;
      const GridValues dg = eng.grid(rb, go, &st);
      const Mesh dm = eng.marching_cubes();
      const ChamferResult ch = chamfer_distance(dm, gm, 0);
      name = std::string("dense vs adaptive mesh (") + cs.name + ")";
      verdict(name.c_str(), dm.positions.size() == gm.positions.size() && ch.chamfer < 1e-6,
              fmt("verts %.0f vs %.0f, chamfer %.2e", double(dm.positions.size()), double(gm.positions.size()),
                  ch.chamfer));
    }
  {  // OldWarpCentred mapping, no reversal
    cuda::GpuGridOptions go;
    go.analytic = {cuda::AnalyticShape::Torus, 0.6f, 0.25f};
    go.network_on_analytic_points = false;
    go.adaptive = false;
    const GridValues g = eng.grid(7, go);
    MarchingCubesOptions mo;
    mo.mapping = VertexMapping::OldWarpCentred;
    mo.reverse_winding = false;
    check_meshes_equal("device MC == host MC (old-warp mapping, table winding)", eng.marching_cubes(mo),
                       marching_cubes(g, mo));
  }
  {  // no surface
    cuda::GpuGridOptions go;
    go.analytic = {cuda::AnalyticShape::Sphere, -0.5f, 0};
    go.network_on_analytic_points = false;
    go.margin = 0.02f;
    cuda::GpuGridStats st;
    eng.grid(7, go, &st);
    const Mesh m = eng.marching_cubes();
    verdict("no-surface grid -> empty mesh", m.empty() && m.positions.empty(),
            fmt("faces %.0f, adaptive points %.0f", double(m.face_count()), double(st.points)));
  }
}

void run_network_checks(const std::string& preset, const Args& args) {
  const ShapeConfig cfg = preset_config(preset);
  std::printf("== check %s: CPU fp32 path vs CUDA bf16 (random weights, seed %llu)\n", preset.c_str(),
              (unsigned long long)args.seed);
  const auto t0 = Clock::now();
  std::map<std::string, TensorToWrite> tensors;
  for (const auto& [name, shape] : ShapeModel::tensor_spec(cfg))
    tensors[name] = TensorToWrite{shape, random_tensor(name, shape, args.seed)};
  namespace fs = std::filesystem;
  const fs::path dir = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  const std::string path = (dir / ("cf_shape_check_" + preset + ".safetensors")).string();
  write_safetensors(path, tensors);
  std::unique_ptr<ShapeModel> cpu = ShapeModel::load(cfg, path);
  fs::remove(path);
  cuda::ShapeWeightSource src;
  src.get = [&tensors](const std::string& n, const std::vector<int64_t>&) {
    auto it = tensors.find(n);
    if (it == tensors.end()) throw Error("no tensor " + n);
    return it->second.data;
  };
  cuda::ShapeEngineOptions eo;
  eo.chunk_points = args.chunk;
  eo.exact_gelu = args.exact_gelu;
  auto eng = cuda::CudaShapeEngine::create(cfg, src, eo);
  tensors.clear();
  std::printf("  setup (weights, file, CPU load, GPU upload) %.1f s; %s\n", ms_since(t0) / 1e3, eng->gemm_path().c_str());

  const std::vector<int> ids = random_ids(cfg.num_encoder_latents, cfg.num_codes, args.seed);
  auto t1 = Clock::now();
  const Latents lc = cpu->decode_tokens(ids);
  const double cpu_ms = ms_since(t1);
  const double gpu_ms = eng->decode_tokens(ids);
  const Latents lg = eng->latents();
  double mx = 0;
  const double e_lat = rel_l2(lg.data.data(), lc.data.data(), lc.data.size(), &mx);
  const std::string lat_name = "latents (" + std::to_string(cfg.num_decoder_layers) + "-layer decoder) rel L2 vs CPU fp32";
  verdict(lat_name.c_str(), e_lat < 2e-2,
          fmt("%.2e (max abs %.2e); cpu %.0f ms", e_lat, mx, cpu_ms) + fmt(", gpu %.2f ms", gpu_ms));

  // arbitrary points: GPU (own latents) and GPU with the CPU latents (isolates the occupancy decoder)
  // Logit criterion: rel L2 < 2e-2 and >= 99% sign agreement. The occupancy decoder's residual stream is bf16 in the
  // reference too (3 roundings of q0, bf16 logit); on the full-size random model the first device run measured
  // 1.5e-2..1.7e-2 (max abs 0.018 on logits up to 1.27), on the small one 6e-3 (docs/cuda-shape.md).
  auto logits_ok = [](double rel, double agree) { return rel < 2e-2 && agree >= 0.99; };
  const size_t P = 4096;
  std::vector<float> xyz(P * 3), oc(P), og(P), og2(P);
  uint64_t s = args.seed * 31 + 5;
  for (auto& v : xyz) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = -1.05f + 2.1f * float(s >> 40) / 16777216.0f;
  }
  auto dec = cpu->occupancy(lc);
  dec->evaluate(xyz.data(), P, oc.data());
  eng->evaluate(xyz.data(), P, og.data());
  eng->set_latents(lc);
  eng->evaluate(xyz.data(), P, og2.data());
  double e1 = rel_l2(og.data(), oc.data(), P, &mx), a1 = sign_agreement(og.data(), oc.data(), P);
  verdict("logits, arbitrary points (GPU latents) rel L2", logits_ok(e1, a1),
          fmt("%.2e (max abs %.2e), sign agreement %.4f", e1, mx, a1));
  double e2 = rel_l2(og2.data(), oc.data(), P, &mx), a2 = sign_agreement(og2.data(), oc.data(), P);
  verdict("logits, arbitrary points (CPU latents) rel L2", logits_ok(e2, a2),
          fmt("%.2e (max abs %.2e), sign agreement %.4f", e2, mx, a2));
  {
    float lo = 1e30f, hi = -1e30f;
    for (float v : oc) lo = std::min(lo, v), hi = std::max(hi, v);
    std::printf("  (CPU logits range [%.3f, %.3f])\n", lo, hi);
  }
  // grid points: device dense grid (per-axis table path) vs the CPU grid
  {
    cuda::GpuGridOptions go;
    go.adaptive = false;
    const GridValues gg = eng->grid(5, go);
    const GridValues cg = dec->grid_dense(5);
    const double e = rel_l2(gg.values.data(), cg.values.data(), cg.values.size(), &mx);
    const double ag = sign_agreement(gg.values.data(), cg.values.data(), cg.values.size());
    verdict("logits, dense rb-5 grid (table path) rel L2", logits_ok(e, ag),
            fmt("%.2e (max abs %.2e), sign agreement %.4f", e, mx, ag));
  }
  // a truncated latent set (preview): masking of the last K/V tile
  {
    Latents lt = lc;
    lt.count = std::max(1, cfg.num_encoder_latents * 3 / 4 - 5);
    lt.data.resize(size_t(lt.count) * lt.width);
    auto dt = cpu->occupancy(lt);
    std::vector<float> a(P), b(P);
    dt->evaluate(xyz.data(), P, a.data());
    eng->set_latents(lt);
    eng->evaluate(xyz.data(), P, b.data());
    const double e = rel_l2(b.data(), a.data(), P, &mx), ag = sign_agreement(b.data(), a.data(), P);
    verdict(("logits, " + std::to_string(lt.count) + " latents (masked tail) rel L2").c_str(), logits_ok(e, ag),
            fmt("%.2e (max abs %.2e), sign agreement %.4f", e, mx, ag));
  }
  // network grids: dense vs adaptive on the device (margin 1 logit, grid.h default)
  {
    eng->set_latents(lg);
    cuda::GpuGridOptions go;
    go.adaptive = false;
    const GridValues dg = eng->grid(7, go);
    const Mesh dm = eng->marching_cubes();
    go.adaptive = true;
    cuda::GpuGridStats st;
    const GridValues ag = eng->grid(7, go, &st);
    const Mesh am = eng->marching_cubes();
    const ChamferResult ch = chamfer_distance(dm, am, 0);
    size_t inside = 0;
    for (float v : dg.values) inside += v >= 0;
    verdict("network rb 7: dense vs adaptive mesh (margin 1)", dm.positions.size() == am.positions.size() || ch.chamfer < 1e-3,
            fmt("verts %.0f vs %.0f, chamfer %.2e", double(dm.positions.size()), double(am.positions.size()), ch.chamfer) +
                fmt(", adaptive %.1f%% of dense, %.1f%% inside", 100.0 * st.points / double(dg.point_count()),
                    100.0 * double(inside) / double(dg.point_count())));
    const Mesh cm = marching_cubes(dg);
    check_meshes_equal("device MC == host MC on the network grid", dm, cm);
    go.scale_margin = true;
    go.final_dilation = 0;
    const GridValues sg = eng->grid(7, go, &st);
    const Mesh sm = eng->marching_cubes();
    const ChamferResult cs = chamfer_distance(dm, sm, 0);
    verdict("network rb 7: dense vs adaptive scaled-margin mesh", dm.positions.size() == sm.positions.size() || cs.chamfer < 1e-3,
            fmt("verts %.0f vs %.0f, chamfer %.2e", double(dm.positions.size()), double(sm.positions.size()), cs.chamfer) +
                fmt(", identical %.0f, adaptive %.1f%% of dense", double(dm.positions == sm.positions && dm.triangles == sm.triangles),
                    100.0 * st.points / double(dg.point_count())));
  }
  // The analytic grid / marching-cubes checks run no network: once per process is enough.
  static bool grid_checks_done = false;
  if (!grid_checks_done) run_grid_mc_checks(*eng);
  else std::printf("-- device grids and marching cubes on analytic fields: checked above (no network involved)\n");
  grid_checks_done = true;
}

// ---- bench ----------------------------------------------------------------------------------------------------------

void run_bench(const std::string& preset, const Args& args) {
  const ShapeConfig cfg = preset_config(preset);
  std::printf("\n== bench %s: width %d, %d latents, %d decoder layers (random weights, seed %llu)\n", preset.c_str(),
              cfg.width, cfg.num_encoder_latents, cfg.num_decoder_layers, (unsigned long long)args.seed);
  auto t0 = Clock::now();
  cuda::ShapeEngineOptions eo;
  eo.chunk_points = args.chunk;
  eo.exact_gelu = args.exact_gelu;
  auto eng = cuda::CudaShapeEngine::create(cfg, random_source(args.seed), eo);
  std::printf("engine: %s, setup %.2f s (incl. random weights), %zu MiB on the device, chunk %zu\n",
              eng->device_name().c_str(), ms_since(t0) / 1e3, eng->vram_bytes() >> 20, eng->chunk_points());
  const std::vector<int> ids = random_ids(cfg.num_encoder_latents, cfg.num_codes, args.seed);
  const int W = cfg.width, N = cfg.num_encoder_latents;
  const double flop_pt = 2.0 * 11.0 * W * W + 4.0 * N * W;  // per grid point (table path)

  std::vector<double> tl;
  for (int r = 0; r < 6; ++r) tl.push_back(eng->decode_tokens(ids));
  std::printf("latent decode (%d layers over %d latents + occupancy K/V): median %.3f ms, first %.3f ms, runs:",
              cfg.num_decoder_layers, N, median(std::vector<double>(tl.begin() + 1, tl.end())), tl[0]);
  for (double v : tl) std::printf(" %.3f", v);
  std::printf("\n");

  // occupancy throughput: dense rb-8 grid (network only), arbitrary points (incl. transfers)
  {
    cuda::GpuGridOptions go;
    go.adaptive = false;
    go.copy_values = false;
    for (int r = 0; r < args.reps + 1; ++r) {
      cuda::GpuGridStats st;
      eng->grid(8, go, &st);
      if (r == 0) continue;  // warm-up (GEMM plans)
      std::printf("occupancy dense rb 8: %zu points in %.1f ms (network %.1f ms) = %.1f Mpoints/s, %.0f TFLOP/s "
                  "(%.2f MFLOP/point), %d chunks\n",
                  st.points, st.ms, st.network_ms, st.points / st.ms / 1e3, flop_pt * st.points / (st.ms * 1e9),
                  flop_pt / 1e6, st.chunks);
    }
    const size_t P = size_t(1) << 20;
    std::vector<float> xyz(P * 3), out(P);
    uint64_t s = 99;
    for (auto& v : xyz) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      v = -1.05f + 2.1f * float(s >> 40) / 16777216.0f;
    }
    eng->evaluate(xyz.data(), P, out.data());
    const auto t1 = Clock::now();
    eng->evaluate(xyz.data(), P, out.data());
    const double ms = ms_since(t1);
    std::printf("occupancy arbitrary points (Fourier path, host arrays): %zu points in %.1f ms = %.1f Mpoints/s\n", P,
                ms, P / ms / 1e3);
  }

  std::printf("\ntokens -> mesh (latent decode + grid + marching cubes incl. mesh download; CUDA events, host total)\n");
  std::printf("%-3s %-16s %4s %11s %8s %9s %9s %8s %9s %9s %9s %9s\n", "rb", "mode", "run", "points", "%dense",
              "latent", "grid", "mc", "total", "net Mp/s", "verts", "faces");
  struct Mode {
    const char* name;
    bool adaptive;
    cuda::AnalyticShape a;
    bool scaled = false;  // grid.h scale_margin + final_dilation 0
  };
  const std::vector<Mode> modes = {{"dense (network)", false, {}},
                                   {"adaptive sphere", true, {cuda::AnalyticShape::Sphere, 0.8f, 0}},
                                   {"adaptive torus", true, {cuda::AnalyticShape::Torus, 0.6f, 0.25f}},
                                   {"scaled sphere", true, {cuda::AnalyticShape::Sphere, 0.8f, 0}, true},
                                   {"scaled torus", true, {cuda::AnalyticShape::Torus, 0.6f, 0.25f}, true},
                                   {"adaptive network", true, {}}};
  std::vector<std::string> mesh_notes;
  for (int rb : args.rbs) {
    std::map<int, Mesh> dense_mesh;  // analytic kind -> dense mesh of the field at this rb (device, checked == host)
    for (const Mode& md : modes) {
      if ((!md.adaptive || md.a.kind == cuda::AnalyticShape::None) && args.no_dense && rb > 8) continue;
      for (int r = 0; r < args.reps; ++r) {
        cuda::GpuGridOptions go;
        go.adaptive = md.adaptive;
        go.coarse_rb = args.coarse_rb;
        go.analytic = md.a;
        go.network_on_analytic_points = true;
        go.scale_margin = md.scaled;
        go.final_dilation = md.scaled ? 0 : -1;
        go.copy_values = false;
        if (md.a.kind != cuda::AnalyticShape::None) go.margin = args.margin;
        cuda::ShapeStageTimes t;
        cuda::GpuGridStats gs;
        Mesh mesh;
        try {
          mesh = eng->tokens_to_mesh(ids, rb, go, {}, &t);
        } catch (const std::exception& e) {
          std::printf("%-3d %-16s %4d  error: %s\n", rb, md.name, r + 1, e.what());
          break;
        }
        std::printf("%-3d %-16s %4d %11zu %8.3f %9.2f %9.2f %8.2f %9.2f %9.1f %9zu %9zu\n", rb, md.name, r + 1, t.points,
                    100.0 * double(t.points) / double(t.grid_points), t.latent_ms, t.grid_ms, t.mc_ms, t.total_ms,
                    t.points / std::max(t.grid_ms, 1e-3) / 1e3, mesh.vertex_count(), mesh.face_count());
        std::fflush(stdout);
        if (r == 0 && md.a.kind != cuda::AnalyticShape::None) {  // the same field evaluated densely: same mesh?
          Mesh& dm = dense_mesh[int(md.a.kind)];
          if (dm.empty()) {
            cuda::GpuGridOptions dg;
            dg.adaptive = false;
            dg.analytic = md.a;
            dg.network_on_analytic_points = false;
            dg.copy_values = false;
            eng->grid(rb, dg);
            dm = eng->marching_cubes();
          }
          const bool same = dm.positions == mesh.positions && dm.triangles == mesh.triangles;
          std::string note = fmt("rb %.0f ", rb) + md.name + fmt(": verts %.0f vs dense %.0f, ", double(mesh.vertex_count()),
                                                                double(dm.vertex_count()));
          if (same) note += "identical to the dense mesh (Chamfer 0)";
          else note += fmt("DIFFERENT, Chamfer %.3e", chamfer_distance(dm, mesh, 200000).chamfer);
          mesh_notes.push_back(note);
        }
      }
    }
  }
  std::printf("dense vs adaptive meshes (analytic fields, margin %.3f):\n", args.margin);
  for (const auto& n : mesh_notes) std::printf("  %s\n", n.c_str());
  // adaptive levels (points per level) once per shape at the largest rb
  const int rbmax = *std::max_element(args.rbs.begin(), args.rbs.end());
  for (const Mode& md : modes) {
    if (!md.adaptive || (md.a.kind == cuda::AnalyticShape::None && args.no_dense && rbmax > 8)) continue;
    cuda::GpuGridOptions go;
    go.coarse_rb = args.coarse_rb;
    go.analytic = md.a;
    go.scale_margin = md.scaled;
    go.final_dilation = md.scaled ? 0 : -1;
    go.copy_values = false;
    if (md.a.kind != cuda::AnalyticShape::None) go.margin = args.margin;
    cuda::GpuGridStats st;
    eng->grid(rbmax, go, &st);
    std::printf("%s rb %d: points per level", md.name, rbmax);
    for (size_t p : st.points_per_level) std::printf(" %zu", p);
    std::printf("; grid %.2f ms of which network %.2f ms, %d network chunks\n", st.ms, st.network_ms, st.chunks);
  }
  std::printf("%s\n", eng->gemm_path().c_str());
}

// ---- prompt -> mesh end to end ----------------------------------------------------------------------------------------

// The CUDA GPT engine (cuda_gpt.h, public API) with random weights of the real shapes and a random conditioning (the
// CPU text encoder is not part of this: its time is reported by `generate`), then the shape stage on the tokens it
// produced. Adaptive grids use the point set of the analytic sphere (scaled-margin rule), the network run on exactly
// those points, as in the tokens -> mesh table. Host clock for the wall times, the engines' CUDA events inside.
void run_e2e(const std::string& preset, const Args& args) {
  const ShapeConfig scfg = preset_config(preset);
  GptConfig gcfg;
  int s_len = 77;
  if (preset == "v0.5") gcfg.use_bbox = true, s_len = 78;
  else if (preset != "v0.1") throw Error("--e2e: presets v0.1 and v0.5 only");
  const int N = scfg.num_encoder_latents;
  std::printf("\n== prompt -> mesh %s: GPT %d blocks, %d tokens + shape stage (random weights, seed %llu)\n", preset.c_str(),
              gcfg.n_layer, N, (unsigned long long)args.seed);
  auto t0 = Clock::now();
  cuda::GptWeightSource gsrc;
  if (args.e2e_bench_weights) {
    gsrc = cli::gpt_bench::synthetic_weights(args.seed);
  } else {
    gsrc.get = [&](const std::string& name, const std::vector<int64_t>& shape) {
      std::vector<float> v = random_tensor(name, shape, args.seed + 100);
      if (shape.size() == 2 && name.find("norm") == std::string::npos)  // matrices ~ N(0, 0.02) like the reference init
        for (auto& x : v) x *= 0.02f * std::sqrt(float(shape.back()));
      return v;
    };
  }
  cuda::EngineOptions geo;
  geo.verbose = false;
  auto gpt = cuda::CudaGptEngine::create(gcfg, N, s_len, gsrc, args.e2e_rows, geo);
  cuda::ShapeEngineOptions eo;
  eo.chunk_points = args.chunk;
  eo.verbose = false;
  std::unique_ptr<cuda::CudaShapeEngine> shp;
  if (args.e2e_shape_engine) shp = cuda::CudaShapeEngine::create(scfg, random_source(args.seed), eo);
  std::printf("engines: %s, setup %.1f s, GPT (rows up to %d) %.2f GiB + shape %.2f GiB on the device\n",
              gpt->device_name().c_str(), ms_since(t0) / 1e3, args.e2e_rows, gpt->vram_bytes() / 1073741824.0,
              shp ? shp->vram_bytes() / 1073741824.0 : 0.0);
  const std::vector<float> cond =
      args.e2e_bench_weights ? cli::gpt_bench::synthetic_cond(1, s_len, args.seed)
                             : random_tensor("e2e.cond", {2, int64_t(s_len), int64_t(gcfg.n_embd)}, args.seed);
  int out_of_range = 0;
  auto to_ids = [&](const std::vector<int32_t>& toks) {
    std::vector<int> ids(toks.begin(), toks.begin() + N);
    for (auto& v : ids)
      if (v < 0 || v >= scfg.num_codes) ++out_of_range, v = ((v % scfg.num_codes) + scfg.num_codes) % scfg.num_codes;
    return ids;
  };
  cuda::GenerateOptions g;  // greedy, CFG 3, graphs
  auto decode = [&](const cuda::GenerateOptions& o, cuda::GenerateStats* st, double* wall) {
    const auto ta = Clock::now();
    gpt->prefill(cond.data(), 2, true);
    auto toks = gpt->generate(o, st);
    *wall = ms_since(ta);
    return toks;
  };
  // The e2e rows' grid: adaptive on the analytic sphere's point set (scaled-margin rule), the network on those points;
  // or dense (the reference's result, for comparison).
  auto stage_options = [&](bool dense) {
    cuda::GpuGridOptions go;
    go.adaptive = !dense;
    if (!dense) {
      go.analytic = {cuda::AnalyticShape::Sphere, 0.8f, 0};
      go.scale_margin = true;
      go.final_dilation = 0;
      go.margin = args.margin;
    }
    go.copy_values = false;
    return go;
  };
  auto sphere_stage = [&](const std::vector<int>& ids, int rb) { shp->tokens_to_mesh(ids, rb, stage_options(false)); };
  if (args.e2e_decodes > 0) {  // decodes only: the first captures the graphs and is not reported
    cuda::GenerateStats st;
    double w;
    auto ids = to_ids(decode(g, &st, &w));
    std::vector<double> tpot;
    // ms per step over a range of the decode's chunks (chunk_ms holds ms per step of each launched chunk)
    auto per_step = [&](size_t c0, size_t c1) {
      double sum = 0;
      c1 = std::min(c1, st.chunk_ms.size());
      for (size_t c = c0; c < c1; ++c) sum += st.chunk_ms[c];
      return c1 > c0 ? sum / double(c1 - c0) : 0.0;
    };
    for (int r = 0; r < args.e2e_decodes; ++r) {
      if (args.e2e_shape_rb > 0) sphere_stage(ids, args.e2e_shape_rb);
      if (args.e2e_idle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.e2e_idle_ms));
      ids = to_ids(decode(g, &st, &w));
      tpot.push_back(st.decode_ms / (N - 1));
      const size_t nc = st.chunk_ms.size();
      std::printf("decode %d: TPOT %.4f ms, GPT wall %.1f ms; ms per step in chunks 1-4 %.4f, 5-%zu %.4f, last quarter "
                  "%.4f\n", r + 1, tpot.back(), w, per_step(0, 4), nc, per_step(4, nc), per_step(nc - nc / 4, nc));
    }
    std::string before;
    if (args.e2e_shape_rb > 0) before += ", shape stage at rb " + std::to_string(args.e2e_shape_rb) + " before each";
    if (args.e2e_idle_ms > 0) before += ", " + std::to_string(args.e2e_idle_ms) + " ms idle before each";
    std::printf("decodes only %s, shape engine %s%s: TPOT median %.4f ms\n", preset.c_str(),
                shp ? "present" : "absent", before.c_str(), median(tpot));
    return;
  }
  {  // warm-up: graph capture, GEMM plans of every rb
    cuda::GenerateStats st;
    double w;
    const auto warm_ids = to_ids(decode(g, &st, &w));
    for (int rb : args.rbs) sphere_stage(warm_ids, rb);
  }
  // Timed like a creator's prompts, back to back: the decode, then the adaptive shape stage at one rb; --reps runs of
  // every rb. The dense grids (the reference's result, for comparison; not part of prompt -> mesh) come after all
  // of them, so their ~0.1-0.4 s of tensor-core work does not precede a timed decode.
  std::printf("%-4s %-10s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "run", "rb / grid", "prefill+", "TPOT", "gpt wall",
              "latent", "grid", "mc", "shape", "points", "prompt->");
  std::printf("%-4s %-10s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "", "", "step0 ms", "ms", "ms", "ms", "ms", "ms", "ms", "",
              "mesh ms");
  std::map<int, std::vector<double>> e2e_ms;
  std::vector<int> ids;
  auto shape_row = [&](int run, int rb, bool dense, const cuda::GenerateStats& st, double gwall) {
    const cuda::GpuGridOptions go = stage_options(dense);
    cuda::ShapeStageTimes t;
    const Mesh m = shp->tokens_to_mesh(ids, rb, go, {}, &t);
    (void)m;
    if (dense)
      std::printf("%-4s %d %-8s %9s %9s %9s %9.2f %9.2f %9.2f %9.2f %9zu %9s\n", "ref", rb, "dense", "", "", "",
                  t.latent_ms, t.grid_ms, t.mc_ms, t.total_ms, t.points, "");
    else
      std::printf("%-4d %d %-8s %9.2f %9.4f %9.1f %9.2f %9.2f %9.2f %9.2f %9zu %9.1f\n", run, rb, "sphere", st.step0_ms,
                  st.decode_ms / (N - 1), gwall, t.latent_ms, t.grid_ms, t.mc_ms, t.total_ms, t.points, gwall + t.total_ms);
    std::fflush(stdout);
    return t.total_ms;
  };
  for (int r = 0; r < args.reps; ++r)
    for (int rb : args.rbs) {
      cuda::GenerateStats st;
      double gwall = 0;
      ids = to_ids(decode(g, &st, &gwall));
      e2e_ms[rb].push_back(gwall + shape_row(r + 1, rb, false, st, gwall));
    }
  for (int rb : args.rbs)
    if (rb <= 8) shape_row(0, rb, true, {}, 0);
  std::printf("prompt -> mesh %s, median of %d runs:", preset.c_str(), args.reps);
  for (const auto& [rb, v] : e2e_ms) std::printf(" rb %d %.1f ms", rb, median(v));
  std::printf("\n");
  if (out_of_range) std::printf("note: %d generated ids outside [0, %d) folded into range\n", out_of_range, scfg.num_codes);

  // Live previews on the shape engine's stream while the GPT decodes: what the pipeline does (Cube3D::generate calls
  // the preview from the token callback; the GPT keeps queue_depth graph launches in flight meanwhile).
  std::printf("TPOT with live previews (prefix -> mean-code latents, rb 5 grid adaptive from rb 4 margin 0.5, device MC):\n");
  // Fixed intervals of 64 and 16 tokens, then the sidebar's default: from 16 tokens, grown by Cube3D::generate's
  // rule (next_preview_interval, max_overhead 0.10).
  struct PreviewRun {
    int every;
    bool adaptive;
  };
  for (const PreviewRun pr : {PreviewRun{0, false}, PreviewRun{64, false}, PreviewRun{16, false}, PreviewRun{16, true}}) {
    PreviewOptions popt;
    popt.every = pr.every;
    popt.adaptive = pr.adaptive;
    for (int r = 0; r < 2; ++r) {
      std::vector<int> prefix;
      int previews = 0, next = pr.every, interval = pr.every;
      double preview_ms = 0;
      cuda::GenerateOptions o = g;
      o.on_token = [&](int index, int variation, int32_t token, double seconds) {
        if (variation != 0) return;
        prefix.push_back(std::clamp(int(token), 0, scfg.num_codes - 1));
        const int k = index + 1;
        if (pr.every <= 0 || k != next || k >= N) return;
        const auto tp = Clock::now();
        shp->decode_preview(prefix);
        cuda::GpuGridOptions go;
        go.coarse_rb = 4;
        go.margin = 0.5f;
        go.copy_values = false;
        shp->grid(5, go);
        const Mesh pm = shp->marching_cubes();
        const double cost = ms_since(tp);
        preview_ms += cost;
        ++previews;
        (void)pm;
        interval = next_preview_interval(popt, interval, cost, seconds * 1000.0 / k);
        next = k + interval;
      };
      cuda::GenerateStats st;
      double w;
      decode(o, &st, &w);
      std::printf("  previews %s %3d tokens (run %d): TPOT %.4f ms, GPT wall %.1f ms, %d previews, %.2f ms each "
                  "(host clock incl. sync)\n",
                  pr.adaptive ? "adaptive from" : "every        ", pr.every, r + 1, st.decode_ms / (N - 1), w, previews,
                  previews ? preview_ms / previews : 0.0);
      std::fflush(stdout);
    }
  }
}

int run_cmd(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("missing value for " + k);
      return argv[++i];
    };
    if (k == "--synthetic") a.presets = cubeforge::cli::split_list(val());
    else if (k == "--rb") {
      a.rbs.clear();
      for (const auto& s : cubeforge::cli::split_list(val())) a.rbs.push_back(std::stoi(s));
    } else if (k == "--reps") a.reps = std::max(1, std::stoi(val()));
    else if (k == "--check") a.check = true;
    else if (k == "--check-only") a.check = a.check_only = true;
    else if (k == "--no-dense") a.no_dense = true;
    else if (k == "--coarse-rb") a.coarse_rb = std::stoi(val());
    else if (k == "--margin") a.margin = std::stof(val());
    else if (k == "--chunk") a.chunk = size_t(std::stoull(val()));
    else if (k == "--exact-gelu") a.exact_gelu = true;
    else if (k == "--e2e") a.e2e = true;
    else if (k == "--e2e-only") a.e2e = a.e2e_only = true;
    else if (k == "--e2e-rows") a.e2e_rows = std::stoi(val());
    else if (k == "--e2e-weights") {
      const std::string w = val();
      if (w != "init" && w != "bench") throw Error("--e2e-weights: init or bench, not '" + w + "'");
      a.e2e_bench_weights = w == "bench";
    } else if (k == "--e2e-decodes") {
      a.e2e_decodes = std::stoi(val());
      if (a.e2e_decodes < 1) throw Error("--e2e-decodes: N >= 1");
      a.e2e = a.e2e_only = true;
    }
    else if (k == "--e2e-no-shape-engine") a.e2e_shape_engine = false;
    else if (k == "--e2e-shape-rb") a.e2e_shape_rb = std::stoi(val());
    else if (k == "--e2e-idle-ms") a.e2e_idle_ms = std::stoi(val());
    else if (k == "--seed") a.seed = std::stoull(val());
    else if (k == "--help" || k == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else {
      std::fprintf(stderr, "unknown option %s\n%s", k.c_str(), kUsage);
      return 2;
    }
  }
  if (a.rbs.empty()) throw Error("--rb: empty list");
  if (a.e2e_rows < 2 || a.e2e_rows > 64) throw Error("--e2e-rows: 2..64 (2 rows per prompt with guidance)");
  if (!a.e2e_shape_engine && a.e2e_decodes == 0) throw Error("--e2e-no-shape-engine needs --e2e-decodes N");
  if (a.e2e_shape_rb != 0 && (a.e2e_decodes == 0 || !a.e2e_shape_engine || a.e2e_shape_rb < 4 || a.e2e_shape_rb > 9))
    throw Error("--e2e-shape-rb R needs --e2e-decodes N and the shape engine, R in 4..9");
  if (a.e2e_idle_ms != 0 && (a.e2e_decodes == 0 || a.e2e_idle_ms < 0 || a.e2e_idle_ms > 60000))
    throw Error("--e2e-idle-ms T needs --e2e-decodes N, T in 1..60000");
  std::string why;
  if (!cuda::cuda_available(&why)) {
    std::fprintf(stderr, "bench-shape-gpu: no usable GPU: %s\n", why.c_str());
    return 1;
  }
  if (a.check) {
    for (const auto& p : a.presets) {
      try {
        run_network_checks(p, a);
      } catch (const std::exception& e) {
        std::printf("  check %s aborted: %s\n", p.c_str(), e.what());
        ++failures;
      }
    }
    std::printf("checks: %d failure(s)\n", failures);
  }
  if (!a.check_only && !a.e2e_only)
    for (const auto& p : a.presets) run_bench(p, a);
  if (a.e2e && !a.check_only)
    for (const auto& p : a.presets) {
      try {
        run_e2e(p, a);
      } catch (const std::exception& e) {
        std::printf("e2e %s aborted: %s\n", p.c_str(), e.what());
        ++failures;
      }
    }
  return failures ? 1 : 0;
}

#else

int run_cmd(int, char**) {
  std::fprintf(stderr,
               "bench-shape-gpu: this build has no CUDA backend (nvcc was not found when it was configured, or "
               "CUBEFORGE_ENABLE_CUDA=OFF); use bench-shape for the CPU shape stage\n");
  return 1;
}

#endif

}  // namespace

CUBEFORGE_COMMAND("bench-shape-gpu", "CUDA shape stage: checks vs CPU, latent decode, occupancy, MC, tokens->mesh",
                  run_cmd);
