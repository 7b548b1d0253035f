// Occupancy grids on the device (grid.h's rules): dense, or coarse-to-fine (cell flags, dilation, stream compaction
// of the points to evaluate, midpoint interpolation), with network and/or analytic values; grid() and its host
// fall-back (a grid too large for the device: the host grid, the GPU evaluating chunks).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "shape_engine_impl.cuh"
#include "shape_grid_kernels.cuh"

namespace cubeforge::cuda {

// ---- grids --------------------------------------------------------------------------------------------------------
void CudaShapeEngine::Impl::analytic(const PointSet& ps, size_t count, const AnalyticShape& a, float* vals,
                                     uint32_t* bts) {
  if (!count) return;
  analytic_kernel<<<blocks_for(count, 256), 256, 0, stream>>>(ps, count, axis, int(a.kind), a.a, a.b, vals, bts);
  CF_CHECK_LAUNCH();
}

// The points of one level: network and/or analytic values into the grid, per the options.
void CudaShapeEngine::Impl::eval_points(const PointSet& ps, size_t count, const GpuGridOptions& o, uint32_t* bts,
                                        GpuGridStats& st) {
  if (!count) return;
  float* vals = values.as<float>();
  const bool ana = o.analytic.kind != AnalyticShape::None;
  if (!ana || o.network_on_analytic_points) {
    if (!have_shape) throw Error("CUDA shape: no latents bound (decode_tokens or set_latents first)");
    const EventPair e = next_events();
    CF_CUDA(cudaEventRecord(e.a, stream));
    run_network(ps, count, nullptr, ana ? bufOut.as<float>() : nullptr, true, ana ? nullptr : vals,
                ana ? nullptr : bts, o.cancel, &st.chunks);
    CF_CUDA(cudaEventRecord(e.b, stream));
  }
  if (ana) analytic(ps, count, o.analytic, vals, bts);
  st.points += count;
}

void CudaShapeEngine::Impl::device_grid(int rb, const GpuGridOptions& o, GpuGridStats& st) {
  const uint32_t M = uint32_t(grid_points_per_axis(rb));
  const size_t total = size_t(M) * M * M;
  const int rc = std::clamp(o.coarse_rb, kMinResolutionBase, rb);
  const bool adaptive = o.adaptive && rc < rb;
  if (o.dilation < 0) throw Error("CUDA shape grid: negative dilation");
  if (o.final_dilation < -1) throw Error("CUDA shape grid: final_dilation below -1");
  for (DevBuf* b : {&values, &bits, &flagA, &refine, &list, &cubtmp}) track(*b);
  values.ensure(total * 4);
  if (adaptive) {
    bits.ensure(round_up(total, 32) / 8);
    flagA.ensure(size_t(1) << (3 * (rb - 1)));
    refine.ensure(size_t(1) << (3 * (rb - 1)));
    list.ensure(total * 4);
  }
  grid_rb = -1;
  const uint32_t shift = uint32_t(kTableMaxRb - rb);
  float* vals = values.as<float>();
  uint32_t* bts = adaptive ? bits.as<uint32_t>() : nullptr;
  if (!adaptive) {
    PointSet ps{nullptr, 0, M, 1, M, shift};
    eval_points(ps, total, o, nullptr, st);
    st.points_per_level = {total};
    grid_rb = rb;
    return;
  }
  CF_CUDA(cudaMemsetAsync(bts, 0, bits.bytes, stream));
  {  // level rc: every point
    const uint32_t n0 = (1u << rc) + 1, s0 = 1u << (rb - rc);
    PointSet ps{nullptr, 0, n0, s0, M, shift};
    const size_t cnt = size_t(n0) * n0 * n0;
    eval_points(ps, cnt, o, bts, st);
    st.points_per_level.push_back(cnt);
    const uint32_t nc = 1u << rc;
    flag_cells_kernel<<<blocks_for(size_t(nc) * nc * nc, 256), 256, 0, stream>>>(vals, M, nc, s0, o.margin, nullptr,
                                                                                  0, flagA.as<uint8_t>());
    CF_CHECK_LAUNCH();
  }
  for (int L = rc + 1; L <= rb; ++L) {
    if (o.cancel && o.cancel->load()) throw Cancelled();
    const uint32_t np = 1u << (L - 1), s = 1u << (rb - L), n = 2 * np + 1;
    const int dil = (L == rb && o.final_dilation >= 0) ? o.final_dilation : o.dilation;  // grid.h rule 3
    dilate_kernel<<<blocks_for(size_t(np) * np * np, 256), 256, 0, stream>>>(flagA.as<uint8_t>(), np, dil,
                                                                             refine.as<uint8_t>());
    CF_CHECK_LAUNCH();
    const int64_t cnt = select(NeedPoint{refine.as<uint8_t>(), bts, np, n, s, M}, size_t(n) * n * n);
    PointSet ps{list.as<uint32_t>(), 0, n, s, M, shift};
    eval_points(ps, size_t(cnt), o, bts, st);
    st.points_per_level.push_back(size_t(cnt));
    for (int pass = 0; pass < 3; ++pass) {
      const size_t ne = np + 1;
      const size_t work = pass == 0 ? ne * ne * np : pass == 1 ? ne * np * n : size_t(np) * n * n;
      interp_kernel<<<blocks_for(work, 256), 256, 0, stream>>>(vals, bts, M, n, s, pass);
      CF_CHECK_LAUNCH();
    }
    if (L < rb) {
      const uint32_t nc = 2 * np;
      const float margin = o.scale_margin ? std::ldexp(o.margin, rc - L) : o.margin;  // grid.h rule 2
      flag_cells_kernel<<<blocks_for(size_t(nc) * nc * nc, 256), 256, 0, stream>>>(
          vals, M, nc, s, margin, refine.as<uint8_t>(), np, flagA.as<uint8_t>());
      CF_CHECK_LAUNCH();
    }
  }
  grid_rb = rb;
}

GridValues CudaShapeEngine::grid(int rb, const GpuGridOptions& o, GpuGridStats* stats) {
  Impl& m = *impl_;
  GpuGridStats st;
  const int M = grid_points_per_axis(rb);
  const size_t total = size_t(M) * M * M;
  GridValues g;
  g.rb = rb;
  g.M = M;
  m.grid_on_host = false;
  m.host_grid = GridValues();
  m.ev_used = 0;
  const EventPair all = m.next_events();  // pair 0: the whole grid; then one pair per network pass
  bool device_ok = true;
  try {
    CF_CUDA(cudaEventRecord(all.a, m.stream));
    m.device_grid(rb, o, st);
    CF_CUDA(cudaEventRecord(all.b, m.stream));
    CF_CUDA(cudaStreamSynchronize(m.stream));
  } catch (const DeviceOom& e) {
    device_ok = false;
    CF_CUDA(cudaStreamSynchronize(m.stream));
    m.ev_used = 0;
    for (DevBuf* b : {&m.values, &m.bits, &m.flagA, &m.refine, &m.list, &m.cubtmp}) b->release();
    std::fprintf(stderr, "CUDA shape: %s; the rb-%d grid is built on the host, the GPU evaluates chunks of %zu points\n",
                 e.what(), rb, m.chunk);
  } catch (...) {
    cudaStreamSynchronize(m.stream);
    m.ev_used = 0;
    m.grid_rb = -1;
    throw;
  }
  if (device_ok) {
    float t = 0;
    CF_CUDA(cudaEventElapsedTime(&t, all.a, all.b));
    st.ms = t;
    for (size_t i = 1; i < m.ev_used; ++i) {
      CF_CUDA(cudaEventElapsedTime(&t, m.ev_pool[i].a, m.ev_pool[i].b));
      st.network_ms += t;
    }
    m.ev_used = 0;
    const double t0 = now_ms();
    if (o.copy_values) {
      g.values.resize(total);
      CF_CUDA(cudaMemcpyAsync(g.values.data(), m.values.p, total * 4, cudaMemcpyDeviceToHost, m.stream));
    }
    if (o.copy_evaluated_bits && m.bits.p && st.points_per_level.size() > 1) {
      g.evaluated_bits.resize((total + 63) / 64);
      CF_CUDA(cudaMemcpyAsync(g.evaluated_bits.data(), m.bits.p, g.evaluated_bits.size() * 8, cudaMemcpyDeviceToHost,
                              m.stream));
    }
    CF_CUDA(cudaStreamSynchronize(m.stream));
    st.copy_ms = now_ms() - t0;
    g.points_evaluated = st.points;
    g.points_per_level = st.points_per_level;
    g.evaluator_calls = size_t(st.chunks);
  } else {
    // Host grid (grid.h rules) with the GPU network (or the analytic field on the host) evaluating chunks.
    const double t0 = now_ms();
    FieldFn f;
    if (o.analytic.kind == AnalyticShape::Sphere) f = [r = o.analytic.a](const float* p, size_t n, float* out) {
      for (size_t i = 0; i < n; ++i)
        out[i] = r - std::sqrt(p[3 * i] * p[3 * i] + p[3 * i + 1] * p[3 * i + 1] + p[3 * i + 2] * p[3 * i + 2]);
    };
    else if (o.analytic.kind == AnalyticShape::Torus)
      f = [R = o.analytic.a, r = o.analytic.b](const float* p, size_t n, float* out) {
        for (size_t i = 0; i < n; ++i) {
          const float q = std::sqrt(p[3 * i] * p[3 * i] + p[3 * i + 2] * p[3 * i + 2]) - R;
          out[i] = r - std::sqrt(q * q + p[3 * i + 1] * p[3 * i + 1]);
        }
      };
    else f = [this](const float* p, size_t n, float* out) { evaluate(p, n, out); };
    if (o.adaptive) {
      AdaptiveOptions ao;
      ao.coarse_rb = o.coarse_rb;
      ao.margin = o.margin;
      ao.dilation = o.dilation;
      ao.scale_margin = o.scale_margin;
      ao.final_dilation = o.final_dilation;
      ao.chunk = m.chunk;
      g = evaluate_adaptive(f, rb, ao);
    } else {
      g = evaluate_dense(f, rb, m.chunk);
    }
    st.on_device = false;
    st.ms = now_ms() - t0;
    st.points = g.points_evaluated;
    st.points_per_level = g.points_per_level;
    m.grid_on_host = true;
    m.host_grid = g;
    m.grid_rb = -1;
  }
  if (stats) *stats = st;
  return g;
}

}  // namespace cubeforge::cuda
