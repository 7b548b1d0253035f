// `cubeforge-gen bench-shape` and `cubeforge-gen preview-study`: the shape stage on the CPU.
// bench-shape: occupancy points/s (grid points and arbitrary points) and tokens → mesh time (latent decode,
// occupancy, marching cubes) at several rb, dense vs adaptive, for a random-weight decoder (width 256, 128 latents,
// 24 decoder layers, 128 frequencies) and the golden configs; medians over --reps.
// preview-study: IoU of the live preview's occupancy (first k of N tokens, every PreviewFill) against the final one
// at k = N/8, N/4, N/2, N, plus the preview's time.
#include <CLI/CLI.hpp>
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "arg_lists.h"
#include "command.h"
#include "stats_util.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_metrics.h"
#include "cubeforge/safetensors.h"
#include "cubeforge/safetensors_writer.h"
#include "cubeforge/shape_model.h"

namespace fs = std::filesystem;
using namespace cubeforge;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double cpu_seconds() {  // CPU time of the whole process (all threads)
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

using cubeforge::cli::median;

void set_threads(int n) {
  if (n <= 0) return;
  set_cpu_threads(n);
}

double load_average() {
  double l[3] = {0, 0, 0};
  return getloadavg(l, 3) > 0 ? l[0] : -1;
}

struct BenchModel {
  std::string name;
  ShapeConfig cfg;
  std::unique_ptr<ShapeModel> model;
  std::vector<int> tokens;
};

// "synthetic": reference defaults (nf 128, embed 32, 16384 codes, 24 decoder layers) at width 256, 128 latents.
// "synthetic-v01": the v0.1 decoder sizes (width 768, 12 heads, 512 latents). Both with a 2-layer encoder.
ShapeConfig synthetic_config(const std::string& name) {
  ShapeConfig c;
  if (name == "synthetic") {
    c.width = 256;
    c.num_heads = 4;
    c.num_encoder_latents = 128;
  }
  c.num_encoder_layers = 2;
  c.encoder_cross_attention_levels = {0};
  return c;
}

// Random weights as the golden files: matrices ~ N(0, 1/fan_in), embeddings/queries N(0,1), norm weights
// 1 + 0.1·N, biases 0.1·N; head_bias_shift is added to the occupancy head bias.
std::map<std::string, TensorToWrite> random_weights(const ShapeConfig& cfg, uint64_t seed, float head_bias_shift) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::map<std::string, TensorToWrite> t;
  for (const auto& [name, shape] : ShapeModel::tensor_spec(cfg)) {
    TensorToWrite w;
    w.shape = shape;
    size_t n = 1;
    for (auto d : shape) n *= size_t(d);
    w.data.resize(n);
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0 && shape.size() == 1;
    const bool embedding = name == "encoder.query" || name == "decoder.positional_encodings" ||
                           name == "bottleneck.block.codebook.weight";
    const bool normw = shape.size() == 1 && !bias;
    const float sd = shape.size() == 2 ? 1.0f / std::sqrt(float(shape[1])) : 1.0f;
    for (auto& v : w.data) {
      const float z = nd(rng);
      v = embedding ? z : bias ? 0.1f * z : normw ? 1.0f + 0.1f * z : sd * z;
    }
    if (name == "occupancy_decoder.c_head.bias") w.data[0] += head_bias_shift;
    t[name] = std::move(w);
  }
  return t;
}

// The synthetic model: random weights, random tokens, and the head bias shifted so that ~30% of the rb-5 grid is
// inside (random weights give an arbitrary logit offset; the shift makes a closed-ish shape to mesh).
BenchModel synthetic_model(const std::string& tmpdir, const std::string& name, uint64_t seed) {
  BenchModel m;
  m.cfg = synthetic_config(name);
  m.name = name + "-w" + std::to_string(m.cfg.width) + "-n" + std::to_string(m.cfg.num_encoder_latents);
  std::mt19937_64 rng(seed + 7);
  for (int i = 0; i < m.cfg.num_encoder_latents; ++i) m.tokens.push_back(int(rng() % uint64_t(m.cfg.num_codes)));
  fs::create_directories(tmpdir);
  const std::string path = (fs::path(tmpdir) / "synthetic_shape.safetensors").string();
  write_safetensors(path, random_weights(m.cfg, seed, 0.0f));
  float shift = 0;
  {
    auto model = ShapeModel::load(m.cfg, path);
    auto dec = model->occupancy(model->decode_tokens(m.tokens));
    std::vector<float> v = dec->grid_dense(5).values;
    std::sort(v.begin(), v.end());
    shift = -v[size_t(0.7 * double(v.size()))];
  }
  write_safetensors(path, random_weights(m.cfg, seed, shift));
  m.model = ShapeModel::load(m.cfg, path);
  return m;
}

BenchModel golden_model(const std::string& dir, const std::string& name) {
  BenchModel m;
  m.name = name;
  const std::string base = dir + "/" + name;
  m.cfg = load_model_config(base + "_config.json").shape;
  m.model = ShapeModel::load(m.cfg, base + "_shape.safetensors");
  const SafeTensors io = SafeTensors::open(base + "_io.safetensors");
  for (int64_t t : io.to_i64("token_ids")) m.tokens.push_back(int(t));
  return m;
}

std::vector<BenchModel> load_models(const std::string& configs, const std::string& golden_dir, uint64_t seed) {
  std::vector<BenchModel> models;
  const std::string tmp = (fs::temp_directory_path() / ("cubeforge_bench_shape_" + std::to_string(::getpid()))).string();
  for (const auto& c : cubeforge::cli::split_list(configs)) {
    if (c == "synthetic" || c == "synthetic-v01")
      models.push_back(synthetic_model(tmp, c, seed));
    else
      models.push_back(golden_model(golden_dir, c));
  }
  fs::remove_all(tmp);
  return models;
}

int run_bench(int argc, char** argv) {
  CLI::App app{"Benchmark the CPU shape stage: occupancy points/s and tokens → mesh, dense vs adaptive", argv[0]};
  std::string golden_dir = "../shared/golden/cube3d", configs = "synthetic,tiny_v01,tiny_v05", rbs_s = "6,7,8";
  int reps = 3, dense_reps_max_rb = 7, batch = 256, coarse_rb = 5;
  size_t points = 16384;
  float margin = AdaptiveOptions{}.margin;
  uint64_t seed = 1;
  bool skip_dense = false;
  int dense_max_rb = 9;
  app.add_option("--dense-max-rb", dense_max_rb, "run dense only up to this rb (above: extrapolated from points/s)");
  int threads = 0;
  app.add_option("--threads", threads, "OpenMP threads (0: default)");
  app.add_option("--golden-dir", golden_dir, "directory of the golden cases");
  app.add_option("--configs", configs, "comma list: synthetic, synthetic-v01 and/or golden case names");
  app.add_option("--rb", rbs_s, "comma list of resolution bases");
  app.add_option("--reps", reps, "repetitions (median reported)");
  app.add_option("--dense-reps-max-rb", dense_reps_max_rb, "dense runs above this rb are run once");
  app.add_option("--batch", batch, "points per thread batch of the occupancy decoder");
  app.add_option("--points", points, "points per points/s measurement");
  app.add_option("--coarse-rb", coarse_rb, "adaptive: fully evaluated level");
  app.add_option("--margin", margin, "adaptive: refine cells with a corner |logit| below this");
  app.add_option("--seed", seed, "seed of the synthetic model");
  app.add_flag("--skip-dense", skip_dense, "adaptive only (dense time extrapolated from points/s)");
  CLI11_PARSE(app, argc, argv);
  set_threads(threads);
  std::printf("threads %d, load average %.2f at start\n", omp_get_max_threads(), load_average());

  std::vector<int> rbs;
  for (const auto& s : cubeforge::cli::split_list(rbs_s)) rbs.push_back(std::stoi(s));
  auto models = load_models(configs, golden_dir, seed);
  for (auto& m : models) {
    const ShapeConfig& c = m.cfg;
    std::printf("== %s: width %d, heads %d, latents %d, freqs %d, decoder layers %d, %.2fM params\n", m.name.c_str(),
                c.width, c.num_heads, c.num_encoder_latents, c.num_freqs, c.num_decoder_layers,
                double(m.model->parameter_count()) / 1e6);
    std::vector<double> t_lat;
    Latents lat;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      lat = m.model->decode_tokens(m.tokens);
      t_lat.push_back(ms_since(t0));
    }
    auto dec = m.model->occupancy(lat);
    dec->set_batch_size(batch);
    {
      const auto t0 = Clock::now();
      auto d2 = m.model->occupancy(lat);
      std::printf("latent decode %.2f ms (median of %d); occupancy setup (K/V + grid tables) %.2f ms\n", median(t_lat),
                  reps, ms_since(t0));
    }
    // points/s: grid points (per-axis table path) and arbitrary points (Fourier + GEMM path)
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.05f, 1.05f);
    const std::vector<float> ax = grid_axis_coords(8);
    std::uniform_int_distribution<int> ui(0, int(ax.size()) - 1);
    std::vector<float> grid_pts(points * 3), rand_pts(points * 3), out(points);
    for (size_t i = 0; i < points * 3; ++i) {
      grid_pts[i] = ax[ui(rng)];
      rand_pts[i] = u(rng);
    }
    double pps_grid = 0, pps_rand = 0, cpu_grid = 0, cpu_rand = 0;
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<double> t, c;
      const std::vector<float>& P = pass == 0 ? grid_pts : rand_pts;
      for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        const double c0 = cpu_seconds();
        dec->evaluate(P.data(), points, out.data());
        c.push_back(cpu_seconds() - c0);
        t.push_back(ms_since(t0));
      }
      (pass == 0 ? pps_grid : pps_rand) = double(points) / (median(t) / 1e3);
      (pass == 0 ? cpu_grid : cpu_rand) = double(points) / median(c);
    }
    std::printf("occupancy: %.0f points/s on grid points, %.0f points/s on arbitrary points (%zu points, batch %d, "
                "wall clock); per CPU-second: %.0f / %.0f\n",
                pps_grid, pps_rand, points, batch, cpu_grid, cpu_rand);
    {
      std::vector<float> v = dec->grid_dense(5).values;
      std::sort(v.begin(), v.end());
      const size_t inside = size_t(v.end() - std::lower_bound(v.begin(), v.end(), 0.0f));
      std::printf("logits on the rb-5 grid: min %.3f, median %.3f, max %.3f, %.1f%% inside; adaptive coarse rb %d, "
                  "margin %.3f\n",
                  v.front(), v[v.size() / 2], v.back(), 100.0 * double(inside) / double(v.size()), coarse_rb, margin);
    }
    std::printf("%-4s %-9s %10s %10s %9s %10s %10s %8s %8s %9s %9s %10s\n", "rb", "mode", "points", "fraction",
                "latent_ms", "occ_ms", "mc_ms", "total_s", "cpu_s", "verts", "faces", "chamfer");
    for (int rb : rbs) {
      Mesh dense_mesh;
      bool have_dense = false;
      double dense_total = 0;
      for (int mode = 0; mode < 2; ++mode) {
        if (mode == 0 && (skip_dense || rb > dense_max_rb)) continue;
        const int n_reps = (mode == 0 && rb > dense_reps_max_rb) ? 1 : reps;
        std::vector<double> tl, to, tm, tt, tc;
        GridValues g;
        Mesh mesh;
        for (int r = 0; r < n_reps; ++r) {
          const auto t0 = Clock::now();
          const double c0 = cpu_seconds();
          const Latents l = m.model->decode_tokens(m.tokens);
          tl.push_back(ms_since(t0));
          const auto t1 = Clock::now();
          auto d = m.model->occupancy(l);
          d->set_batch_size(batch);
          if (mode == 0) {
            g = d->grid_dense(rb);
          } else {
            AdaptiveOptions ao;
            ao.coarse_rb = coarse_rb;
            ao.margin = margin;
            g = d->grid_adaptive(rb, ao);
          }
          to.push_back(ms_since(t1));
          const auto t2 = Clock::now();
          mesh = marching_cubes(g);
          tm.push_back(ms_since(t2));
          tt.push_back(ms_since(t0));
          tc.push_back(cpu_seconds() - c0);
        }
        std::string cham = "-";
        if (mode == 0) {
          dense_mesh = mesh;
          have_dense = true;
          dense_total = median(tt);
        } else if (have_dense) {
          const ChamferResult cr = chamfer_distance(mesh, dense_mesh, 0);  // on the vertices
          char b[64];
          std::snprintf(b, sizeof b, "%.2e", cr.chamfer);
          cham = b;
        }
        std::printf("%-4d %-9s %10zu %10.4f %9.1f %10.1f %10.1f %8.3f %8.3f %9zu %9zu %10s", rb,
                    mode ? "adaptive" : "dense", g.points_evaluated, g.fraction_evaluated(), median(tl), median(to),
                    median(tm), median(tt) / 1e3, median(tc), mesh.vertex_count(), mesh.face_count(), cham.c_str());
        if (mode == 1 && have_dense)
          std::printf("  speedup %.1fx, vertex diff %+lld", dense_total / median(tt),
                      (long long)mesh.vertex_count() - (long long)dense_mesh.vertex_count());
        if (mode == 1 && !have_dense)
          std::printf("  (dense estimate %.1f s from points/s)", double(g.point_count()) / pps_grid);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  std::printf("load average %.2f at end\n", load_average());
  return 0;
}

int run_preview_study(int argc, char** argv) {
  CLI::App app{"Live preview convergence: IoU of the preview occupancy vs the final one at k = N/8, N/4, N/2, N",
               argv[0]};
  std::string golden_dir = "../shared/golden/cube3d", configs = "tiny_v01,tiny_v05,synthetic";
  int rb = 6, random_sequences = 8, threads = 0;
  uint64_t seed = 1;
  app.add_option("--golden-dir", golden_dir, "directory of the golden cases");
  app.add_option("--configs", configs, "comma list: golden case names and/or synthetic");
  app.add_option("--rb", rb, "resolution base of the compared occupancy grids (dense)");
  app.add_option("--random-sequences", random_sequences, "also average over this many random token sequences");
  app.add_option("--seed", seed, "seed of the synthetic model and of the random sequences");
  app.add_option("--threads", threads, "OpenMP threads (0: default)");
  CLI11_PARSE(app, argc, argv);
  set_threads(threads);
  auto models = load_models(configs, golden_dir, seed);
  const std::vector<PreviewFill> fills = {PreviewFill::Truncate, PreviewFill::MeanCode, PreviewFill::RepeatPrefix,
                                          PreviewFill::ZeroCode};
  const std::vector<int> divs = {8, 4, 2, 1};
  for (auto& m : models) {
    const int N = int(m.tokens.size());
    std::vector<std::vector<int>> seqs = {m.tokens};
    std::mt19937_64 rng(seed * 31 + 5);
    for (int s = 0; s < random_sequences; ++s) {
      std::vector<int> t(N);
      for (int& id : t) id = int(rng() % uint64_t(m.cfg.num_codes));
      seqs.push_back(t);
    }
    // iou[fill][div][seq]
    std::vector<std::vector<std::vector<double>>> iou(fills.size(), std::vector<std::vector<double>>(divs.size()));
    std::vector<double> inside_frac;
    std::vector<std::vector<double>> latent_ms(fills.size());
    for (const auto& seq : seqs) {
      const GridValues fin = m.model->occupancy(m.model->decode_tokens(seq))->grid_dense(rb);
      size_t inside = 0;
      for (float v : fin.values) inside += v >= 0;
      inside_frac.push_back(double(inside) / double(fin.point_count()));
      for (size_t f = 0; f < fills.size(); ++f)
        for (size_t d = 0; d < divs.size(); ++d) {
          const int k = std::max(1, N / divs[d]);
          const std::vector<int> prefix(seq.begin(), seq.begin() + k);
          const auto t0 = Clock::now();
          const Latents lat = m.model->decode_preview(prefix, fills[f]);
          if (divs[d] == 2) latent_ms[f].push_back(ms_since(t0));
          iou[f][d].push_back(occupancy_iou(m.model->occupancy(lat)->grid_dense(rb), fin));
        }
    }
    double mean_inside = 0;
    for (size_t s = 1; s < inside_frac.size(); ++s) mean_inside += inside_frac[s];
    if (inside_frac.size() > 1) mean_inside /= double(inside_frac.size() - 1);
    std::printf("== %s (N=%d, dense rb %d; %s tokens: final %.1f%% inside; %d random sequences: mean %.1f%% inside)\n",
                m.name.c_str(), N, rb, m.name.rfind("tiny", 0) == 0 ? "golden" : "seed", 100.0 * inside_frac[0],
                random_sequences, 100.0 * mean_inside);
    std::printf("%-8s | %-34s | %-34s | %s\n", "", "IoU, golden/seed tokens", "IoU, mean over random sequences",
                "latents ms");
    std::printf("%-8s | %8s %8s %8s %6s | %8s %8s %8s %6s | %s\n", "fill", "N/8", "N/4", "N/2", "N", "N/8", "N/4", "N/2",
                "N", "(k=N/2)");
    for (size_t f = 0; f < fills.size(); ++f) {
      std::printf("%-8s |", to_string(fills[f]));
      for (size_t d = 0; d < divs.size(); ++d) std::printf(d == 3 ? " %6.3f" : " %8.4f", iou[f][d][0]);
      std::printf(" |");
      for (size_t d = 0; d < divs.size(); ++d) {
        double mean = 0;
        for (size_t s = 1; s < iou[f][d].size(); ++s) mean += iou[f][d][s];
        mean = iou[f][d].size() > 1 ? mean / double(iou[f][d].size() - 1) : NAN;
        std::printf(d == 3 ? " %6.3f" : " %8.4f", mean);
      }
      std::printf(" | %.2f\n", median(latent_ms[f]));
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

CUBEFORGE_COMMAND("bench-shape", "benchmark the CPU shape stage (occupancy points/s, tokens → mesh dense/adaptive)",
                  run_bench);
CUBEFORGE_COMMAND("preview-study", "live-preview convergence (IoU vs final) per preview fill strategy",
                  run_preview_study);
