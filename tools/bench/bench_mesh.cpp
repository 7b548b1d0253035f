// cubeforge-bench-mesh: timings of the mesh half of the shape decode on analytic fields: marching cubes at
// rb 6/7/8 (dense grids), and adaptive vs dense evaluation (points, time, mesh agreement) with an artificially
// expensive field. Prints medians over --reps runs (plain steady_clock timing).
//   cubeforge-bench-mesh [--reps N] [--cost-ns NS] [--max-rb R] [--threads T] [--margin M] [--coarse-rb C]
// Dense evaluation of the expensive field is skipped at rb 9 (135 M points); adaptive rows are still printed.
//   cubeforge-bench-mesh --cleanup [--model DIR] [--prompts "a;b"] [--rb R] [--cache DIR] [--reps N] [--cold]
// Clean-up mode: each step of the shape stage's clean-up (weld at 1e-5, degenerate faces, small components,
// unreferenced vertices, normals, pivot) and the whole cleanup_mesh, timed separately on realistic marching-cubes
// meshes: the default model's adaptive grids for the prompts (greedy, raw meshes cached in --cache) and a
// multi-component analytic field. Prints a hash of each clean-up result, so runs of two builds can be compared.
// --cold fixes glibc's mmap threshold at 128 KiB, so every large buffer is fresh memory (page faults included), as for
// the first clean-up in a process or after glibc gave freed memory back; without it, repetitions reuse the heap.
//   cubeforge-bench-mesh --decimate [--cap N] [--model DIR] [--prompts "a;b"] [--rb R] [--cache DIR] [--reps N]
// Decimation mode (builds with mesh IO): the same meshes after the shape stage's clean-up, decimated to the cap in
// one meshoptimizer pass and with the parallel cell pre-reduction (DecimateOptions::cells): median time, faces, the
// error meshoptimizer reports, and the Chamfer / Hausdorff distance to the undecimated mesh.
#include <malloc.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cubeforge/analytic_fields.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/mesh_metrics.h"
#if CUBEFORGE_HAVE_MESH_IO
#include "cubeforge/mesh_io.h"
#endif
#include "cubeforge/mesh_metrics.h"
#include "cubeforge/shape_model.h"

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

// Raw marching-cubes meshes of the clean-up mode, cached as <name>.mesh (vertex and face counts, then the arrays).
bool read_mesh(const std::string& path, Mesh& m) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  uint64_t n[2];
  bool ok = std::fread(n, sizeof n, 1, f) == 1;
  if (ok) {
    m.positions.resize(n[0]);
    m.triangles.resize(n[1]);
    ok = std::fread(m.positions.data(), sizeof(Vec3), n[0], f) == n[0] &&
         std::fread(m.triangles.data(), sizeof(m.triangles[0]), n[1], f) == n[1];
  }
  std::fclose(f);
  return ok;
}

void write_mesh(const std::string& path, const Mesh& m) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  const uint64_t n[2] = {m.positions.size(), m.triangles.size()};
  std::fwrite(n, sizeof n, 1, f);
  std::fwrite(m.positions.data(), sizeof(Vec3), n[0], f);
  std::fwrite(m.triangles.data(), sizeof(m.triangles[0]), n[1], f);
  std::fclose(f);
}

uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

// Hash of everything clean-up produces: positions, normals, colours, faces in order, and the report.
uint64_t cleanup_hash(const Mesh& m, const CleanupReport& r) {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv(h, m.positions.data(), m.positions.size() * sizeof(Vec3));
  h = fnv(h, m.normals.data(), m.normals.size() * sizeof(Vec3));
  h = fnv(h, m.colors.data(), m.colors.size() * sizeof(Vec3));
  h = fnv(h, m.triangles.data(), m.triangles.size() * sizeof(m.triangles[0]));
  const size_t counts[6] = {r.vertices_merged,  r.degenerate_faces_removed,      r.components,
                            r.components_removed, r.faces_removed_with_components, r.unreferenced_vertices_removed};
  h = fnv(h, counts, sizeof counts);
  return fnv(h, r.pivot_translation.data(), sizeof(Vec3));
}

struct NamedMesh {
  std::string name;
  Mesh mesh;
};

std::vector<NamedMesh> cleanup_inputs(const std::string& model_dir, const std::string& prompts, int rb,
                                      const std::string& cache) {
  std::vector<NamedMesh> out;
  std::vector<std::string> list;
  for (size_t s = 0; s <= prompts.size();) {
    const size_t e = std::min(prompts.find(';', s), prompts.size());
    if (e > s) list.push_back(prompts.substr(s, e - s));
    s = e + 1;
  }
  std::unique_ptr<Cube3D> model;
  for (size_t p = 0; p < list.size(); ++p) {
    NamedMesh nm{"model p" + std::to_string(p) + " rb" + std::to_string(rb), {}};
    char tag[17];
    std::snprintf(tag, sizeof tag, "%016llx", (unsigned long long)fnv(0xcbf29ce484222325ULL, list[p].data(), list[p].size()));
    const std::string file = cache.empty() ? "" : cache + "/model_rb" + std::to_string(rb) + "_" + tag + ".mesh";
    if (file.empty() || !read_mesh(file, nm.mesh)) {
      if (!model) model = Cube3D::load(ModelFiles::from_directory(model_dir));
      GenerationRequest req;
      req.prompt = list[p];
      const auto t0 = Clock::now();
      const TokenResult tr = model->generate_tokens(req);
      MeshOptions mo;
      mo.resolution_base = rb;
      auto occ = model->shape_model().occupancy(model->shape_model().decode_tokens(tr.tokens));
      nm.mesh = marching_cubes(occ->grid_adaptive(rb, adaptive_options(mo)));
      std::printf("generated '%s' in %.1f s\n", list[p].c_str(),
                  std::chrono::duration<double>(Clock::now() - t0).count());
      if (!file.empty()) write_mesh(file, nm.mesh);
    }
    out.push_back(std::move(nm));
  }
  // Analytic stand-in with several components of different sizes (two are below the 15% filter).
  FieldFn f = union_field(torus_field(0.55f, 0.2f), box_field(0.15f, 0.7f, 0.15f));
  f = union_field(f, sphere_field(0.1f, {0.8f, 0.8f, 0.8f}));
  f = union_field(f, sphere_field(0.05f, {-0.8f, 0.8f, -0.8f}));
  f = union_field(f, sphere_field(0.3f, {0.0f, -0.75f, 0.0f}));
  out.push_back({"analytic rb" + std::to_string(rb), marching_cubes(evaluate_dense(f, rb, size_t(1) << 20))});
  return out;
}

// The steps of cleanup_mesh with the shape stage's options (weld 1e-5, 15% component filter), one at a time.
int bench_cleanup(const std::vector<NamedMesh>& meshes, int reps) {
  std::printf("== clean-up steps (shape stage options: weld 1e-5, component ratio 0.15; pivot BaseCentre timed "
              "alone), median of %d ms ==\n", reps);
  std::printf("%-16s %8s %8s %7s %7s %7s %7s %7s %7s %7s %8s  %s\n", "mesh", "verts", "faces", "weld", "degen",
              "comps", "unref", "normals", "pivot", "sum", "cleanup", "result hash");
  for (const auto& nm : meshes) {
    CleanupOptions o;
    o.merge_epsilon = 1e-5f;
    // Inputs of each step: the previous steps' output.
    std::vector<Mesh> stage(7);
    stage[0] = nm.mesh;
    auto step = [&](int i, auto&& f) {
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        Mesh m = stage[i];
        const auto a = Clock::now();
        f(m);
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
        if (r == 0) stage[i + 1] = std::move(m);
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    double ms[6];
    ms[0] = step(0, [&](Mesh& m) { merge_duplicate_vertices(m, o.merge_epsilon); });
    ms[1] = step(1, [&](Mesh& m) { remove_degenerate_faces(m); });
    ms[2] = step(2, [&](Mesh& m) { remove_small_components(m, o.min_component_ratio); });
    ms[3] = step(3, [&](Mesh& m) { remove_unreferenced_vertices(m); });
    ms[4] = step(4, [&](Mesh& m) { compute_vertex_normals(m); });
    ms[5] = step(5, [&](Mesh& m) { apply_pivot(m, Pivot::BaseCentre); });
    CleanupReport report;
    Mesh result;
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      Mesh m = nm.mesh;
      const auto a = Clock::now();
      report = cleanup_mesh(m, o);
      t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      result = std::move(m);
    }
    std::sort(t.begin(), t.end());
    double sum = 0;
    for (double x : ms) sum += x;
    std::printf("%-16s %8zu %8zu %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %8.2f  %016llx (%zu v, %zu f, %zu comps)\n",
                nm.name.c_str(), nm.mesh.vertex_count(), nm.mesh.face_count(), ms[0], ms[1], ms[2], ms[3], ms[4],
                ms[5], sum, t[t.size() / 2], (unsigned long long)cleanup_hash(result, report), result.vertex_count(),
                result.face_count(), report.components);
  }
  return 0;
}

#if CUBEFORGE_HAVE_MESH_IO
// Decimation to the cap in one pass vs with the parallel cell pre-reduction, on the cleaned meshes.
int bench_decimate(const std::vector<NamedMesh>& meshes, size_t cap, int reps) {
  std::printf("== decimation to %zu faces (%d threads), median of %d ==\n", cap, omp_get_max_threads(), reps);
  std::printf("%-16s %8s %6s %9s %8s %9s %9s %9s\n", "mesh", "faces", "cells", "ms", "faces", "error", "chamfer",
              "hausdorff");
  for (const auto& nm : meshes) {
    Mesh clean = nm.mesh;
    CleanupOptions co;
    co.merge_epsilon = 1e-5f;
    co.min_component_ratio = 0.15f;
    cleanup_mesh(clean, co);
    for (int cells : {1, 8}) {
      DecimateOptions o;
      o.max_faces = cap;
      o.cells = cells;
      Mesh out;
      DecimateResult r;
      const double t = median_ms(reps, [&] {
        out = clean;
        r = decimate_mesh(out, o);
      });
      const ChamferResult d = chamfer_distance(clean, out, 20000);
      std::printf("%-16s %8zu %6d %9.1f %8zu %9.5f %9.5f %9.5f\n", nm.name.c_str(), clean.face_count(), r.cells, t,
                  out.face_count(), double(r.error), d.chamfer, d.hausdorff);
    }
  }
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int reps = 5, max_rb = 8, threads = 0, coarse_rb = 5, rb = 8;
  double cost_ns = 1000;
  float margin = 0.02f;
  bool cleanup = false, decimate = false;
  size_t cap = 20000;
  std::string model_dir = "assets/default-model", cache,
              prompts = "a tall wooden chair with a high back;a red car with four wheels;a pine tree with three "
                                      "tiers;a two-story house with a chimney";
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
    else if (!std::strcmp(argv[i], "--cleanup")) cleanup = true;
    else if (!std::strcmp(argv[i], "--decimate")) decimate = true;
    else if (!std::strcmp(argv[i], "--cap")) cap = size_t(std::max(1, std::atoi(next("--cap"))));
    else if (!std::strcmp(argv[i], "--model")) model_dir = next("--model");
    else if (!std::strcmp(argv[i], "--prompts")) prompts = next("--prompts");
    else if (!std::strcmp(argv[i], "--rb")) rb = std::clamp(std::atoi(next("--rb")), 4, 9);
    else if (!std::strcmp(argv[i], "--cache")) cache = next("--cache");
    else if (!std::strcmp(argv[i], "--cold")) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    else {
      std::fprintf(stderr,
                   "usage: %s [--reps N] [--cost-ns NS] [--max-rb R] [--threads T] [--margin M] [--coarse-rb C]\n"
                   "       %s --cleanup [--model DIR] [--prompts \"a;b\"] [--rb R] [--cache DIR] [--reps N] [--cold]\n"
                   "       %s --decimate [--cap N] [--model DIR] [--prompts \"a;b\"] [--rb R] [--cache DIR] [--reps N]\n",
                   argv[0], argv[0], argv[0]);
      return 2;
    }
  }
  if (threads > 0) omp_set_num_threads(threads);
  if (cleanup) return bench_cleanup(cleanup_inputs(model_dir, prompts, rb, cache), reps);
  if (decimate) {
#if CUBEFORGE_HAVE_MESH_IO
    return bench_decimate(cleanup_inputs(model_dir, prompts, rb, cache), cap, reps);
#else
    std::fprintf(stderr, "--decimate needs a build with mesh IO (CUBEFORGE_WITH_MESH_IO)\n");
    return 2;
#endif
  }
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
