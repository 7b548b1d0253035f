// cubeforge-bench-editor: editor performance on a scene of 200 objects / 2 M triangles (each object a unique,
// vertex-coloured 10k-triangle mesh). Measures, headless (EGL surfaceless, llvmpipe on CPU-only machines):
// frame time (render + glFinish), pick latency (BVH build once, then ray casts through viewport pixels), scene save
// (cold: writes all mesh .glb files; warm: reuses them) and load. Not a test: prints a table, optionally writes the
// scene for the GUI measurement (`cubeforge --script` with "measure_frames", see docs/editor.md).
// usage: cubeforge-bench-editor [--objects N] [--tris-per-object N] [--size WxH] [--frames N] [--keep DIR]
#include "core/bvh.h"
#include "core/document.h"
#include "render/egl_context.h"
#include "render/renderer.h"

#include <glad/gl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

using namespace cubeforge::editor;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Bumpy UV sphere with about `tris` triangles and vertex colours.
std::shared_ptr<const cubeforge::Mesh> blob(int tris, unsigned seed) {
  int rings = std::max(4, int(std::sqrt(tris / 2.0)));
  int segs = std::max(4, tris / (2 * rings));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  float f1 = 2 + 4 * u(rng), f2 = 2 + 4 * u(rng), amp = 0.05f + 0.1f * u(rng);
  auto m = std::make_shared<cubeforge::Mesh>();
  const float pi = 3.14159265f;
  for (int r = 0; r <= rings; ++r)
    for (int s = 0; s <= segs; ++s) {
      float phi = pi * r / rings, th = 2 * pi * s / segs;
      float rad = 0.5f * (1 + amp * std::sin(f1 * phi) * std::cos(f2 * th));
      glm::vec3 n(std::sin(phi) * std::cos(th), std::cos(phi), std::sin(phi) * std::sin(th));
      m->positions.push_back(to_vec3(n * rad));
      m->normals.push_back(to_vec3(n));
      m->colors.push_back({0.5f + 0.5f * n.x, 0.5f + 0.5f * n.y, 0.6f});
    }
  for (int r = 0; r < rings; ++r)
    for (int s = 0; s < segs; ++s) {
      uint32_t a = r * (segs + 1) + s, b = a + segs + 1;
      m->triangles.push_back({a, a + 1, b});
      m->triangles.push_back({a + 1, b + 1, b});
    }
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, size_t(p * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 200, tris_per = 10000, frames = 20, W = 1280, H = 720;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--objects") objects = std::stoi(next());
    else if (a == "--tris-per-object") tris_per = std::stoi(next());
    else if (a == "--frames") frames = std::stoi(next());
    else if (a == "--size") std::sscanf(next().c_str(), "%dx%d", &W, &H);
    else if (a == "--keep") keep = next();
    else {
      std::fprintf(stderr, "usage: %s [--objects N] [--tris-per-object N] [--size WxH] [--frames N] [--keep DIR]\n", argv[0]);
      return 2;
    }
  }
  Log log(false);
  Document doc(log);
  auto t0 = Clock::now();
  int side = int(std::ceil(std::sqrt(double(objects))));
  for (int i = 0; i < objects; ++i) {
    Entity e;
    e.name = "Blob " + std::to_string(i);
    e.mesh = blob(tris_per, unsigned(i));
    e.transform.position = {float(i % side) * 2.5f - side * 1.25f, 1.f, float(i / side) * 2.5f - side * 1.25f};
    e.transform.scale = {1.8f, 1.8f, 1.8f};
    doc.add_entity(e);
  }
  std::printf("scene: %d objects, %zu triangles (built in %.0f ms)\n", objects, doc.scene().triangle_count(), ms_since(t0));

  // --- picking ---
  Camera cam;
  cam.frame(doc.scene().scene_bounds());
  cam.distance *= 0.8f;
  t0 = Clock::now();
  for (auto& e : doc.scene().entities()) mesh_accel_cache().bvh(e.mesh);
  double bvh_ms = ms_since(t0);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> ux(0.f, float(W)), uy(0.f, float(H));
  std::vector<double> picks;
  int hits = 0;
  for (int i = 0; i < 1000; ++i) {
    Ray r = cam.pixel_ray(ux(rng), uy(rng), float(W), float(H));
    auto t = Clock::now();
    RayHit h = raycast_scene(doc.scene(), r, true);
    picks.push_back(ms_since(t));
    hits += h.hit && !h.on_ground;
  }
  std::printf("pick: BVH build for all meshes %.0f ms (once, lazily per mesh); ray cast median %.3f ms, p99 %.3f ms "
              "(%d/1000 rays hit a part)\n", bvh_ms, median(picks), pct(picks, 0.99), hits);

  // --- save / load ---
  fs::path dir = keep.empty() ? fs::temp_directory_path() / ("cf-bench-" + std::to_string(::getpid())) : fs::path(keep);
  fs::create_directories(dir);
  std::string path = (dir / "bench.cfscene").string();
  fs::remove_all(dir / "bench_meshes");
  t0 = Clock::now();
  SaveStats st = doc.save(path);
  double save_cold = ms_since(t0);
  t0 = Clock::now();
  doc.save(path);
  double save_warm = ms_since(t0);
  Document back(log);
  t0 = Clock::now();
  back.open(path);
  double load_ms = ms_since(t0);
  uintmax_t bytes = 0;
  for (auto& f : fs::recursive_directory_iterator(dir))
    if (f.is_regular_file()) bytes += f.file_size();
  std::printf("save: cold %.0f ms (%zu mesh files, %.1f MB), warm %.0f ms (meshes reused); load %.0f ms (%zu entities)\n",
              save_cold, st.meshes_written, bytes / 1e6, save_warm, load_ms, back.scene().size());
  if (keep.empty()) fs::remove_all(dir);
  else std::printf("scene kept at %s\n", path.c_str());

  // --- headless frame time ---
  HeadlessGL gl;
  std::string err;
  if (!gl.create(&err)) {
    std::printf("render: skipped (%s)\n", err.c_str());
    return 0;
  }
  Renderer renderer;
  if (!renderer.init(&err)) {
    std::printf("render: %s\n", err.c_str());
    return 1;
  }
  renderer.resize(W, H);
  RenderOptions opt;
  t0 = Clock::now();
  renderer.render(doc.scene(), doc.selection(), cam, opt);
  glFinish();
  double first = ms_since(t0);
  std::vector<double> ft;
  for (int i = 0; i < frames; ++i) {
    cam.orbit(1.f, 0.f);
    auto t = Clock::now();
    renderer.render(doc.scene(), doc.selection(), cam, opt);
    glFinish();
    ft.push_back(ms_since(t));
  }
  doc.selection().select(doc.scene().entities()[0].id);
  opt.wireframe = true;
  std::vector<double> fw;
  for (int i = 0; i < std::max(3, frames / 4); ++i) {
    auto t = Clock::now();
    renderer.render(doc.scene(), doc.selection(), cam, opt);
    glFinish();
    fw.push_back(ms_since(t));
  }
  std::printf("render (%s, %dx%d, headless EGL): first frame incl. upload %.0f ms; frame median %.1f ms, p90 %.1f ms; "
              "with wireframe overlay %.1f ms\n", gl.renderer_name().c_str(), W, H, first, median(ft), pct(ft, 0.9), median(fw));
  return 0;
}
