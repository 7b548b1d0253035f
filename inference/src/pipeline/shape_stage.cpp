// Tokens → mesh and the live preview for Cube3D: latent decode, occupancy grid (dense or adaptive), marching cubes
// with the reference conventions, clean-up; and the full prompt → mesh generation with previews every K tokens,
// K grown adaptively so previews cost at most PreviewOptions::max_overhead of the decode time. Variations' shape
// stages are pipelined when the GPU meshes: the variations' CPU clean-ups run in parallel beside the GPU work.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>

#include "cubeforge/cube3d.h"
#include "cubeforge/error.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/shape_model.h"

namespace cubeforge {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

Mesh grid_to_mesh(const GridValues& grid) { return marching_cubes(grid); }

void cleanup(Mesh& mesh, const MeshOptions& opt) {
  if (mesh.empty()) return;
  CleanupOptions co;
  co.min_component_ratio = opt.remove_small_components ? 0.15f : 0.0f;
  // Weld vertices closer than 1e-5 (marching cubes puts two vertices almost on a grid node when a value is
  // ~0 there): exchange formats that print ~7 digits (ASCII FBX) would otherwise collapse them on re-import.
  co.merge_epsilon = 1e-5f;
  co.pivot = opt.base_pivot ? Pivot::BaseCentre : Pivot::None;
  co.compute_normals = opt.normals;
  cleanup_mesh(mesh, co);
}

// Previews keep every component (a partial shape may be in pieces) and only weld near-coincident vertices.
void cleanup_preview(Mesh& mesh) {
  if (mesh.empty()) return;
  CleanupOptions co;
  co.merge_epsilon = 1e-5f;
  cleanup_mesh(mesh, co);
}
}  // namespace

AdaptiveOptions adaptive_options(const MeshOptions& opt, const CancelToken* cancel) {
  AdaptiveOptions ao;
  ao.coarse_rb = opt.coarse_resolution_base;
  ao.margin = opt.adaptive_margin;
  ao.scale_margin = opt.adaptive_scale_margin;
  ao.final_dilation = opt.adaptive_final_dilation;
  ao.cancel = cancel;
  return ao;
}

const char* to_string(OccupancyMode m) { return m == OccupancyMode::Dense ? "dense" : "adaptive"; }
OccupancyMode occupancy_mode_from_string(const std::string& s) {
  if (s == "dense") return OccupancyMode::Dense;
  if (s == "adaptive") return OccupancyMode::Adaptive;
  throw Error("occupancy mode must be 'dense' or 'adaptive', got '" + s + "'");
}

Mesh Cube3D::tokens_to_mesh(const std::vector<int>& tokens, const MeshOptions& opt, const CancelToken* cancel,
                            GenerationStats* stats, const StageCallback& on_stage) const {
  GenerationStats local;
  GenerationStats& st = stats ? *stats : local;
  Mesh mesh = surface_mesh(tokens, opt, cancel, st, on_stage);
  if (on_stage) on_stage("cleanup");
  clean_surface(mesh, opt, st);
  return mesh;
}

void Cube3D::clean_surface(Mesh& mesh, const MeshOptions& opt, GenerationStats& st) {
  const auto t = Clock::now();
  cleanup(mesh, opt);
  st.cleanup_ms = ms_since(t);
}

Mesh Cube3D::surface_mesh(const std::vector<int>& tokens, const MeshOptions& opt, const CancelToken* cancel,
                          GenerationStats& st, const StageCallback& on_stage) const {
  grid_points_per_axis(opt.resolution_base);  // validates rb (throws Error outside 4..9)
  auto stage = [&](const char* s) {
    if (on_stage) on_stage(s);
  };
  st.shape_backend = "cpu";
  if (shape_backend_) {
    try {
      stage("latents");  // the GPU backend runs latents, occupancy and meshing in one call
      Mesh mesh = shape_backend_->tokens_to_mesh(tokens, opt, cancel, &st);
      st.shape_backend = shape_backend_->name();
      return mesh;
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "GPU shape stage failed (%s); running tokens -> mesh on the CPU\n", e.what());
      st.shape_backend = std::string("cpu (GPU failed: ") + e.what() + ")";
    }
  }
  auto t = Clock::now();
  stage("latents");
  const Latents lat = shape_->decode_tokens(tokens, cancel);
  st.latent_ms = ms_since(t);
  t = Clock::now();
  stage("occupancy");
  auto occ = shape_->occupancy(lat);
  GridValues grid;
  if (opt.mode == OccupancyMode::Dense) {
    grid = occ->grid_dense(opt.resolution_base, cancel);
  } else {
    grid = occ->grid_adaptive(opt.resolution_base, adaptive_options(opt, cancel));
  }
  st.occupancy_ms = ms_since(t);
  st.points_evaluated = grid.points_evaluated;
  st.points_dense = grid.point_count();
  throw_if_cancelled(cancel);
  t = Clock::now();
  stage("meshing");
  Mesh mesh = grid_to_mesh(grid);
  st.meshing_ms = ms_since(t);
  return mesh;
}

Mesh Cube3D::preview_mesh(const std::vector<int>& prefix, int rb, const CancelToken* cancel) const {
  // Coarse-to-fine from rb 4: a preview must cost a small share of the decode time.
  AdaptiveOptions ao;
  ao.coarse_rb = 4;
  ao.margin = 0.5f;
  ao.cancel = cancel;
  if (shape_backend_) {
    try {
      Mesh mesh = shape_backend_->preview_mesh(prefix, rb, ao, cancel);
      cleanup_preview(mesh);
      return mesh;
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "GPU preview failed (%s); previewing on the CPU\n", e.what());
    }
  }
  const Latents lat = shape_->decode_preview(prefix, PreviewFill::MeanCode, cancel);
  auto occ = shape_->occupancy(lat);
  GridValues grid = rb > 4 ? occ->grid_adaptive(rb, ao) : occ->grid_dense(rb, cancel);
  Mesh mesh = grid_to_mesh(grid);
  cleanup_preview(mesh);
  return mesh;
}

ShapeResult Cube3D::generate(const GenerationRequest& req, const MeshOptions& mopt, const TokenCallback& on_token,
                             const PreviewCallback& on_preview, const PreviewOptions& popt, const CancelToken* cancel,
                             const StageCallback& on_stage) {
  if (req.variations != 1)
    throw Error("Cube3D::generate makes one shape; use generate_variations for several variations");
  return std::move(generate_variations(req, mopt, on_token, on_preview, popt, cancel, on_stage).front());
}

std::vector<ShapeResult> Cube3D::generate_variations(const GenerationRequest& req, const MeshOptions& mopt,
                                                     const TokenCallback& on_token, const PreviewCallback& on_preview,
                                                     const PreviewOptions& popt, const CancelToken* cancel,
                                                     const StageCallback& on_stage) {
  grid_points_per_axis(mopt.resolution_base);
  if (popt.every > 0) grid_points_per_axis(popt.resolution_base);
  const auto t0 = Clock::now();
  const int N = cfg_.num_tokens();
  GenerationStats previews;  // previews, preview_ms_total, first_preview_ms of the whole run
  // Previews follow one variation at a time: the first to start decoding, then (on the CPU, where they run in turn)
  // the next one once it has finished. On a GPU batch all start together: variation 0.
  int followed = -1;
  std::vector<int> prefix;
  prefix.reserve(N);
  int interval = popt.every, next_preview = popt.every;
  double last_token_ms = 0, decode_ms = 0;
  if (on_stage) on_stage("gpt");
  auto token_cb = [&](const TokenEvent& e) {
    if (on_token) on_token(e);
    if (e.index == 0 && followed < 0) {
      followed = e.variation;
      prefix.clear();
      decode_ms = 0;
      interval = next_preview = popt.every;
    }
    if (e.variation != followed) return;
    if (e.index == 0) prefix.clear();  // the CPU restarting this variation after a GPU failure
    prefix.push_back(e.id);
    decode_ms += e.elapsed_ms - last_token_ms;
    last_token_ms = e.elapsed_ms;
    const int k = e.index + 1;
    if (k >= N) followed = -1;
    if (!on_preview || popt.every <= 0 || k != next_preview || k >= N) return;
    const auto tp = Clock::now();
    Mesh m = preview_mesh(prefix, popt.resolution_base, cancel);
    const double cost = ms_since(tp);
    previews.previews++;
    previews.preview_ms_total += cost;
    if (previews.first_preview_ms == 0) previews.first_preview_ms = ms_since(t0);
    on_preview(k, m);
    // Keep preview time ≤ max_overhead × decode time: interval ≥ cost / (overhead × mean step time).
    interval = next_preview_interval(popt, interval, cost, decode_ms / k);
    next_preview = k + interval;
  };
  std::vector<TokenResult> tokens = generate_token_variations(req, token_cb, cancel);
  throw_if_cancelled(cancel);
  std::vector<ShapeResult> out(tokens.size());
  // With a GPU shape stage, each variation's clean-up (CPU, single-threaded) runs on a helper thread of its own while
  // the GPU meshes the next variations and the other clean-ups run (the last one on this thread); on the CPU path
  // the shape stage already uses every core, so they run in turn. Declared after `out`: an exception (cancel)
  // unwinds through the futures' destructors, which wait for the clean-ups still using out[v].
  // (CUBEFORGE_SERIAL_CLEANUP=1: in turn, the measurement baseline of this overlap)
  static const bool serial = [] {
    const char* e = std::getenv("CUBEFORGE_SERIAL_CLEANUP");
    return e && std::string(e) == "1";
  }();
  std::vector<std::future<void>> cleaning;
  auto finish = [&](ShapeResult& res) {
    clean_surface(res.mesh, mopt, res.stats);
    res.stats.total_ms = ms_since(t0);
  };
  for (size_t v = 0; v < tokens.size(); ++v) {
    ShapeResult& res = out[v];
    res.tokens = std::move(tokens[v].tokens);
    res.stats = std::move(tokens[v].stats);
    res.stats.previews = previews.previews;
    res.stats.preview_ms_total = previews.preview_ms_total;
    res.stats.first_preview_ms = previews.first_preview_ms;
    res.mesh = surface_mesh(res.tokens, mopt, cancel, res.stats, on_stage);
    if (on_stage) on_stage("cleanup");
    if (shape_backend_ && !serial && v + 1 < tokens.size())
      cleaning.push_back(std::async(std::launch::async, finish, std::ref(res)));
    else
      finish(res);
  }
  for (auto& c : cleaning) c.get();  // rethrows a clean-up's error
  return out;
}

}  // namespace cubeforge
