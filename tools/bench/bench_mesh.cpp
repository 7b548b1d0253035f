// cubeforge-bench-mesh: timings of the mesh half of the shape decode on analytic fields: marching cubes at
// rb 6/7/8 (dense grids), and adaptive vs dense evaluation (points, time, mesh agreement) with an artificially
// expensive field. Prints medians over --reps runs (plain steady_clock timing).
//   cubeforge-bench-mesh [--reps N] [--cost-ns NS] [--max-rb R] [--threads T] [--margin M] [--coarse-rb C]
// Dense evaluation of the expensive field is skipped at rb 9 (135 M points); adaptive rows are still printed.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cubeforge/analytic_fields.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/mesh_metrics.h"

using namespace cubeforge;
using Clock = std::chrono::steady_clock;

namespace {

template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Burns roughly `ns` nanoseconds per point (calibrated), then evaluates the wrapped field: a stand-in for the
// occupancy decoder's cost per query point. Points are spread over the OpenMP threads like a real decoder would.
FieldFn expensive(FieldFn f, double ns, int iters_per_ns_x1000) {
  const long iters = long(ns * iters_per_ns_x1000 / 1000.0);
  return [f = std::move(f), iters](const float* p, size_t n, float* out) {
    f(p, n, out);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < long(n); ++i) {
      float acc = out[i];
      for (long k = 0; k < iters; ++k) acc = acc * 0.9999999f + 1e-9f * std::sin(float(k));
      out[i] = out[i] + (acc - acc);  // keep the work, keep the value
    }
  };
}

int calibrate() {  // inner-loop iterations per 1000 ns on one thread
  const long probe = 2000000;
  float acc = 1;
  const auto a = Clock::now();
  for (long k = 0; k < probe; ++k) acc = acc * 0.9999999f + 1e-9f * std::sin(float(k));
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - a).count();
  if (acc == 12345.f) std::puts("");
  return std::max(1, int(probe / ns * 1000.0));
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5, max_rb = 8, threads = 0, coarse_rb = 5;
  double cost_ns = 1000;
  float margin = 0.02f;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char* name) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(next("--reps")));
    else if (!std::strcmp(argv[i], "--cost-ns")) cost_ns = std::atof(next("--cost-ns"));
    else if (!std::strcmp(argv[i], "--max-rb")) max_rb = std::clamp(std::atoi(next("--max-rb")), 6, 9);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(next("--threads"));
    else if (!std::strcmp(argv[i], "--margin")) margin = float(std::atof(next("--margin")));
    else if (!std::strcmp(argv[i], "--coarse-rb")) coarse_rb = std::atoi(next("--coarse-rb"));
    else {
      std::fprintf(stderr,
                   "usage: %s [--reps N] [--cost-ns NS] [--max-rb R] [--threads T] [--margin M] [--coarse-rb C]\n",
                   argv[0]);
      return 2;
    }
  }
  if (threads > 0) omp_set_num_threads(threads);
  std::printf("cubeforge-bench-mesh: %d threads, median of %d runs\n\n", omp_get_max_threads(), reps);

  struct NamedField {
    const char* name;
    FieldFn f;
  };
  const std::vector<NamedField> fields = {{"sphere", sphere_field(0.8f)},
                                          {"torus", torus_field(0.6f, 0.25f)},
                                          {"box", box_field(0.6f, 0.45f, 0.5f)}};

  std::printf("== marching cubes on dense grids (NewWarp mapping, reversed winding) ==\n");
  std::printf("%-7s %3s %12s %10s %10s %10s %12s\n", "field", "rb", "points", "vertices", "faces", "mc ms",
              "cleanup ms");
  for (const auto& nf : fields)
    for (int rb = 6; rb <= max_rb; ++rb) {
      GridValues g = evaluate_dense(nf.f, rb, size_t(1) << 20);
      Mesh m;
      const double t = median_ms(reps, [&] { m = marching_cubes(g); });
      Mesh c = m;
      const double tc = median_ms(std::max(1, reps / 2), [&] {
        c = m;
        cleanup_mesh(c);
      });
      std::printf("%-7s %3d %12zu %10zu %10zu %10.2f %12.2f\n", nf.name, rb, g.point_count(), m.vertex_count(),
                  m.face_count(), t, tc);
    }

  const int ipn = calibrate();
  std::printf("\n== adaptive (coarse rb %d, margin %g, dilation 1) vs dense, expensive field (nominal %.0f ns/point/thread) ==\n",
              coarse_rb, double(margin), cost_ns);
  std::printf("%-7s %3s %12s %12s %7s %10s %10s %8s %8s %9s %9s %9s  %s\n", "field", "rb", "dense pts", "adaptive pts",
              "frac %", "dense ms", "adapt ms", "speedup", "ns/pt", "d verts", "a verts", "chamfer", "points per level");
  for (const auto& nf : fields)
    for (int rb = 6; rb <= max_rb; ++rb) {
      FieldFn ef = expensive(nf.f, cost_ns, ipn);
      AdaptiveOptions ao;
      ao.coarse_rb = coarse_rb;
      ao.margin = margin;
      GridValues d, a;
      const bool dense = rb <= 8;
      const int dense_reps = rb >= 8 ? 1 : std::max(1, reps / 2);
      const double td = dense ? median_ms(dense_reps, [&] { d = evaluate_dense(ef, rb); }) : 0.0;
      const double ta = median_ms(rb >= 9 ? 1 : reps, [&] { a = evaluate_adaptive(ef, rb, ao); });
      const Mesh ma = marching_cubes(a);
      std::string levels;
      for (size_t p : a.points_per_level) levels += std::to_string(p) + " ";
      if (dense) {
        const Mesh md = marching_cubes(d);
        const ChamferResult cd = chamfer_distance(md, ma, 0);
        std::printf("%-7s %3d %12zu %12zu %7.2f %10.1f %10.1f %7.1fx %8.0f %9zu %9zu %9.2g  %s\n", nf.name, rb,
                    d.points_evaluated, a.points_evaluated, 100.0 * a.fraction_evaluated(), td, ta, td / ta,
                    td * 1e6 / double(d.points_evaluated), md.vertex_count(), ma.vertex_count(), cd.chamfer,
                    levels.c_str());
      } else {
        std::printf("%-7s %3d %12zu %12zu %7.2f %10s %10.1f %8s %8s %9s %9zu %9s  %s\n", nf.name, rb, a.point_count(),
                    a.points_evaluated, 100.0 * a.fraction_evaluated(), "-", ta, "-", "-", "-", ma.vertex_count(), "-",
                    levels.c_str());
      }
    }
  return 0;
}
