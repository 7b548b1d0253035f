// OccupancyDecoder (spec §8.4) on the CPU in fp32: latent-side K/V computed once per shape; points are evaluated in
// batches (OpenMP over batches, sgemm for every product incl. the per-head attention). For points of the reference
// grid (any rb ≤ 9: the grids nest exactly) the Fourier embedding + first Linear is separable per axis and is read
// from per-axis tables built once, so grid evaluation skips the trigonometry and the 3(2F+1)×W GEMM.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>

#include "cubeforge/error.h"
#include "cubeforge/shape_model.h"
#include "shape/shape_kernels.h"
#include "shape/shape_weights.h"

namespace cubeforge {

struct OccupancyDecoder::State {
  std::vector<float> kv;  // [N, 2W]: c_k(LN(lat)) | c_v(LN(lat))
  // Per-axis tables for the finest reference grid: axis_coord[i] (i < Mt) and table[(a·Mt + i)·W + d] =
  // Σ_f W_in[d, f] · e_f for the embedding features f of axis a at coordinate axis_coord[i] (bias not included).
  int Mt = 0;
  double step = 0;
  std::vector<float> axis_coord;
  std::vector<float> table;
  int batch = 256;
  std::atomic<size_t> evaluated{0};
};

namespace {

// Embedding features that depend on axis a only: [x_a, cos-block a, sin-block a] (the 2nf+1 of them).
void axis_feature_columns(int a, int nf, std::vector<int>& cols) {
  cols.clear();
  cols.push_back(a);
  for (int k = 0; k < nf; ++k) cols.push_back(3 + a * nf + k);
  for (int k = 0; k < nf; ++k) cols.push_back(3 + 3 * nf + a * nf + k);
}

struct Scratch {
  std::vector<float> emb, h1, q0, t, q, att, u, s, xyz_miss;
  std::vector<int> idx, miss;
  Scratch(const ShapeWeights& w, int B, int N) {
    emb.resize(size_t(B) * w.F);
    h1.resize(size_t(B) * w.W);
    q0.resize(size_t(B) * w.W);
    t.resize(size_t(B) * w.W);
    q.resize(size_t(B) * w.W);
    att.resize(size_t(B) * w.W);
    u.resize(size_t(B) * 4 * w.W);
    s.resize(size_t(B) * std::max(N, 1));
    xyz_miss.resize(size_t(B) * 3);
    idx.resize(size_t(B) * 3);
    miss.reserve(B);
  }
};

}  // namespace

OccupancyDecoder::~OccupancyDecoder() = default;

std::unique_ptr<OccupancyDecoder> ShapeModel::occupancy(const Latents& lat) const {
  const ShapeWeights& w = *w_;
  if (lat.width != w.W)
    throw Error("occupancy: latents have width " + std::to_string(lat.width) + ", the model has " + std::to_string(w.W));
  if (lat.count < 1 || lat.data.size() != size_t(lat.count) * lat.width)
    throw Error("occupancy: latents hold " + std::to_string(lat.data.size()) + " values for " +
                std::to_string(lat.count) + " rows of " + std::to_string(lat.width));
  std::unique_ptr<OccupancyDecoder> d(new OccupancyDecoder());
  d->w_ = w_;
  d->n_latents_ = lat.count;
  d->st_ = std::make_unique<OccupancyDecoder::State>();
  auto& st = *d->st_;
  st.kv = shape::cross_attn_kv(lat.data.data(), lat.count, w.W, w.ln_eps, w.occ);

  // Axis tables for the finest grid (rb = kMaxResolutionBase); coarser grids' coordinates are a subset.
  st.Mt = grid_points_per_axis(kMaxResolutionBase);
  st.step = 2.0 * kGridHalfExtent / double(st.Mt - 1);
  st.axis_coord = grid_axis_coords(kMaxResolutionBase);
  const int nf = w.nf, nfe = 2 * nf + 1;
  std::vector<float> feats(size_t(st.Mt) * nfe), emb(size_t(w.F)), wsub(size_t(w.W) * nfe);
  st.table.resize(size_t(3) * st.Mt * w.W);
  std::vector<int> cols;
  for (int a = 0; a < 3; ++a) {
    axis_feature_columns(a, nf, cols);
    for (int i = 0; i < st.Mt; ++i) {
      float p[3] = {0, 0, 0};
      p[a] = st.axis_coord[i];
      shape::fourier_embed(p, 1, w.embed_w, w.carrier.data(), nf, emb.data(), w.F);
      for (int c = 0; c < nfe; ++c) feats[size_t(i) * nfe + c] = emb[cols[c]];
    }
    for (int dd = 0; dd < w.W; ++dd)
      for (int c = 0; c < nfe; ++c) wsub[size_t(dd) * nfe + c] = w.q_in_w[size_t(dd) * w.F + cols[c]];
    shape::gemm_nt(st.Mt, w.W, nfe, 1.0f, feats.data(), nfe, wsub.data(), nfe, 0.0f,
                   st.table.data() + size_t(a) * st.Mt * w.W, w.W);
  }
  return d;
}

void OccupancyDecoder::set_batch_size(int b) { st_->batch = std::clamp(b, 1, 1 << 16); }
size_t OccupancyDecoder::points_evaluated() const { return st_->evaluated.load(); }

namespace {

// One batch of n ≤ B points through the whole decoder.
void run_batch(const ShapeWeights& w, const OccupancyDecoder::State& st, int N, const float* xyz, int n, float* out,
               Scratch& s) {
  const int W = w.W;
  // 1. h1 = query_in.in_layer(embed(x)): table rows for grid points, GEMM for the others.
  s.miss.clear();
  for (int p = 0; p < n; ++p) {
    bool hit = true;
    for (int a = 0; a < 3; ++a) {
      const float x = xyz[3 * p + a];
      const double g = (double(x) + kGridHalfExtent) / st.step;
      int i = -1;
      if (g > -0.5 && g < double(st.Mt) - 0.5) i = int(std::lround(g));
      if (i < 0 || st.axis_coord[i] != x) {
        hit = false;
        break;
      }
      s.idx[3 * p + a] = i;
    }
    if (!hit) {
      s.miss.push_back(p);
      continue;
    }
    float* h = s.h1.data() + size_t(p) * W;
    const float* t0 = st.table.data() + (size_t(0) * st.Mt + s.idx[3 * p]) * W;
    const float* t1 = st.table.data() + (size_t(1) * st.Mt + s.idx[3 * p + 1]) * W;
    const float* t2 = st.table.data() + (size_t(2) * st.Mt + s.idx[3 * p + 2]) * W;
    for (int d = 0; d < W; ++d) h[d] = w.q_in_b[d] + t0[d] + t1[d] + t2[d];
  }
  if (!s.miss.empty()) {
    const int m = int(s.miss.size());
    for (int i = 0; i < m; ++i) std::memcpy(&s.xyz_miss[3 * i], xyz + 3 * s.miss[i], 3 * sizeof(float));
    shape::fourier_embed(s.xyz_miss.data(), m, w.embed_w, w.carrier.data(), w.nf, s.emb.data(), w.F);
    shape::linear(s.emb.data(), m, w.F, w.q_in_w, w.q_in_b, W, s.q.data());
    for (int i = 0; i < m; ++i)
      std::memcpy(s.h1.data() + size_t(s.miss[i]) * W, s.q.data() + size_t(i) * W, sizeof(float) * W);
  }
  shape::silu_inplace(s.h1.data(), size_t(n) * W);
  shape::linear(s.h1.data(), n, W, w.q_out_w, w.q_out_b, W, s.q0.data());

  // 2. cross-attention to the latents (K/V precomputed), then the MLP; residual stream q0.
  shape::layer_norm_rows(s.q0.data(), n, W, w.ln_eps, nullptr, nullptr, s.t.data());
  shape::linear(s.t.data(), n, W, w.occ.q_w, w.occ.q_b, W, s.q.data());
  shape::attention_gemm(s.q.data(), W, n, st.kv.data(), 2 * W, st.kv.data() + W, 2 * W, N, w.H, w.hd,
                        1.0f / std::sqrt(float(w.hd)), s.att.data(), W, s.s.data(), false);
  shape::linear(s.att.data(), n, W, w.occ.proj_w, w.occ.proj_b, W, s.q0.data(), true);
  shape::layer_norm_rows(s.q0.data(), n, W, w.ln_eps, nullptr, nullptr, s.t.data());
  shape::linear(s.t.data(), n, W, w.occ.up_w, w.occ.up_b, 4 * W, s.u.data());
  shape::gelu_inplace(s.u.data(), size_t(n) * 4 * W);
  shape::linear(s.u.data(), n, 4 * W, w.occ.down_w, w.occ.down_b, W, s.q0.data(), true);

  // 3. logit = c_head(LN_affine(q0))
  shape::layer_norm_rows(s.q0.data(), n, W, w.ln_eps, w.occ_lnf_w, w.occ_lnf_b, s.t.data());
  for (int p = 0; p < n; ++p) {
    const float* r = s.t.data() + size_t(p) * W;
    float acc = 0;
    for (int d = 0; d < W; ++d) acc += r[d] * w.head_w[d];
    out[p] = acc + w.head_b[0];
  }
}

}  // namespace

void OccupancyDecoder::evaluate(const float* xyz, size_t n, float* out, const CancelToken* cancel) const {
  if (n == 0) return;
  const ShapeWeights& w = *w_;
  const State& st = *st_;
  const int B = st.batch;
  const long nb = long((n + B - 1) / B);
  std::atomic<bool> stop{false};
  std::exception_ptr err;
  const int threads = std::max(1, int(std::min<long>(nb, omp_get_max_threads())));
#pragma omp parallel num_threads(threads)
  {
    std::unique_ptr<Scratch> s;
    auto record = [&] {
#pragma omp critical(cubeforge_occupancy_err)
      if (!err) err = std::current_exception();
      stop = true;
    };
    try {
      s = std::make_unique<Scratch>(w, B, n_latents_);
    } catch (...) {
      record();
    }
    // Every thread takes part in the loop (no early exit from a worksharing construct).
#pragma omp for schedule(dynamic, 1)
    for (long b = 0; b < nb; ++b) {
      if (!s || stop.load(std::memory_order_relaxed)) continue;
      if (cancel && cancel->cancelled()) {
        stop = true;
        continue;
      }
      const size_t p0 = size_t(b) * B;
      const int m = int(std::min<size_t>(B, n - p0));
      try {
        run_batch(w, st, n_latents_, xyz + 3 * p0, m, out + p0, *s);
      } catch (...) {
        record();
      }
    }
  }
  if (err) std::rethrow_exception(err);
  throw_if_cancelled(cancel);
  st_->evaluated += n;
}

FieldFn OccupancyDecoder::field_fn(const CancelToken* cancel) const {
  return [this, cancel](const float* xyz, size_t n, float* out) { evaluate(xyz, n, out, cancel); };
}

GridValues OccupancyDecoder::grid_dense(int rb, const CancelToken* cancel) const {
  return evaluate_dense(field_fn(cancel), rb, 16384, {}, cancel);
}

GridValues OccupancyDecoder::grid_adaptive(int rb, AdaptiveOptions options) const {
  const CancelToken* cancel = options.cancel;
  return evaluate_adaptive(field_fn(cancel), rb, options);
}

}  // namespace cubeforge
