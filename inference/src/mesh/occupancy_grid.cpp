// Owns the reference query grid (coordinates, flat order), dense and coarse-to-fine evaluation of a batched field,
// and the occupancy IoU between two grids. The refinement rule is documented in include/cubeforge/grid.h.
#include <algorithm>
#include <cmath>
#include <string>

#include "cubeforge/error.h"
#include "cubeforge/grid.h"

namespace cubeforge {

int grid_points_per_axis(int rb) {
  if (rb < kMinResolutionBase || rb > kMaxResolutionBase)
    throw Error("resolution base " + std::to_string(rb) + " is out of range [" + std::to_string(kMinResolutionBase) +
                ", " + std::to_string(kMaxResolutionBase) + "]");
  return (1 << rb) + 1;
}

float grid_coord(int i, int M) {
  if (i == M - 1) return float(kGridHalfExtent);
  const double step = (2.0 * kGridHalfExtent) / double(M - 1);
  return float(double(i) * step - kGridHalfExtent);
}

std::vector<float> grid_axis_coords(int rb) {
  const int M = grid_points_per_axis(rb);
  std::vector<float> c(M);
  for (int i = 0; i < M; ++i) c[i] = grid_coord(i, M);
  return c;
}

GridValues make_dense_grid(int rb, std::vector<float> values) {
  GridValues g;
  g.rb = rb;
  g.M = grid_points_per_axis(rb);
  if (values.size() != g.point_count())
    throw Error("grid of resolution base " + std::to_string(rb) + " needs " + std::to_string(g.point_count()) +
                " values, got " + std::to_string(values.size()));
  g.values = std::move(values);
  g.points_evaluated = g.point_count();
  return g;
}

namespace {

// Evaluates the points listed in `idx` (flat indices) in batches and stores the results in g.values.
class BatchEvaluator {
 public:
  BatchEvaluator(const FieldFn& f, GridValues& g, const std::vector<float>& coords, size_t chunk,
                 const GridProgressFn& progress, const CancelToken* cancel)
      : f_(f), g_(g), c_(coords), chunk_(std::max<size_t>(chunk, 1)), progress_(progress), cancel_(cancel) {
    xyz_.resize(chunk_ * 3);
    out_.resize(chunk_);
  }

  void run(const std::vector<uint64_t>& idx, size_t total_known) {
    const size_t M = size_t(g_.M), MM = M * M;
    for (size_t b = 0; b < idx.size(); b += chunk_) {
      throw_if_cancelled(cancel_);
      const size_t n = std::min(chunk_, idx.size() - b);
      for (size_t p = 0; p < n; ++p) {
        const uint64_t q = idx[b + p];
        xyz_[3 * p] = c_[q / MM];
        xyz_[3 * p + 1] = c_[(q / M) % M];
        xyz_[3 * p + 2] = c_[q % M];
      }
      f_(xyz_.data(), n, out_.data());
      for (size_t p = 0; p < n; ++p) g_.values[idx[b + p]] = out_[p];
      g_.points_evaluated += n;
      ++g_.evaluator_calls;
      if (progress_) progress_(g_.points_evaluated, total_known);
    }
    throw_if_cancelled(cancel_);
  }

 private:
  const FieldFn& f_;
  GridValues& g_;
  const std::vector<float>& c_;
  size_t chunk_;
  const GridProgressFn& progress_;
  const CancelToken* cancel_;
  std::vector<float> xyz_, out_;
};

inline bool test_and_set(std::vector<uint64_t>& bits, size_t n) {
  uint64_t& w = bits[n >> 6];
  const uint64_t m = uint64_t(1) << (n & 63);
  if (w & m) return true;
  w |= m;
  return false;
}
inline bool bit(const std::vector<uint64_t>& bits, size_t n) { return (bits[n >> 6] >> (n & 63)) & 1u; }

}  // namespace

GridValues evaluate_dense(const FieldFn& field, int rb, size_t chunk, const GridProgressFn& progress,
                          const CancelToken* cancel) {
  if (!field) throw Error("evaluate_dense: no field function");
  GridValues g;
  g.rb = rb;
  g.M = grid_points_per_axis(rb);
  const std::vector<float> c = grid_axis_coords(rb);
  const size_t M = size_t(g.M), MM = M * M, total = g.point_count();
  chunk = std::max<size_t>(chunk, 1);
  g.values.resize(total);
  std::vector<float> xyz(chunk * 3);
  for (size_t start = 0; start < total; start += chunk) {
    throw_if_cancelled(cancel);
    const size_t n = std::min(chunk, total - start);
    for (size_t p = 0; p < n; ++p) {
      const size_t q = start + p;
      xyz[3 * p] = c[q / MM];
      xyz[3 * p + 1] = c[(q / M) % M];
      xyz[3 * p + 2] = c[q % M];
    }
    field(xyz.data(), n, g.values.data() + start);
    g.points_evaluated += n;
    ++g.evaluator_calls;
    if (progress) progress(g.points_evaluated, total);
  }
  throw_if_cancelled(cancel);
  g.points_per_level = {total};
  return g;
}

GridValues evaluate_adaptive(const FieldFn& field, int rb, const AdaptiveOptions& opt) {
  if (!field) throw Error("evaluate_adaptive: no field function");
  const int M_ = grid_points_per_axis(rb);
  const int rc = std::clamp(opt.coarse_rb, kMinResolutionBase, rb);
  if (rc >= rb) return evaluate_dense(field, rb, opt.chunk, opt.progress, opt.cancel);
  if (opt.dilation < 0) throw Error("evaluate_adaptive: negative dilation");
  if (opt.final_dilation < -1) throw Error("evaluate_adaptive: final_dilation below -1");

  GridValues g;
  g.rb = rb;
  g.M = M_;
  const size_t M = size_t(M_), MM = M * M, total = g.point_count();
  const std::vector<float> coords = grid_axis_coords(rb);
  g.values.assign(total, 0.0f);
  g.evaluated_bits.assign((total + 63) / 64, 0);
  BatchEvaluator eval(field, g, coords, opt.chunk, opt.progress, opt.cancel);
  float margin = opt.margin;  // of the level being flagged (rule 2)
  auto lin = [M, MM](size_t i, size_t j, size_t k) { return i * MM + j * M + k; };

  // Level rc: every point.
  size_t known = 0;
  {
    const size_t s = size_t(1) << (rb - rc), n = (size_t(1) << rc) + 1;
    std::vector<uint64_t> idx;
    idx.reserve(n * n * n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        for (size_t k = 0; k < n; ++k) {
          const size_t q = lin(i * s, j * s, k * s);
          test_and_set(g.evaluated_bits, q);
          idx.push_back(q);
        }
    known = idx.size();
    eval.run(idx, known);
    g.points_per_level.push_back(idx.size());
  }

  // Flagged cells of level rc: every cell with a sign change or a corner inside the margin.
  auto corner_flag = [&](size_t base, size_t s) {
    bool pos = false, neg = false, near = false;
    for (int c = 0; c < 8; ++c) {
      const float v = g.values[base + ((c & 1) ? s * MM : 0) + ((c & 2) ? s * M : 0) + ((c & 4) ? s : 0)];
      if (v >= 0.0f) pos = true; else neg = true;
      if (std::fabs(v) < margin) near = true;
    }
    return (pos && neg) || near;
  };
  std::vector<uint32_t> flagged;  // cell linear indices at the current level ((ci * n + cj) * n + ck)
  {
    const size_t s = size_t(1) << (rb - rc), n = size_t(1) << rc;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        for (size_t k = 0; k < n; ++k)
          if (corner_flag(lin(i * s, j * s, k * s), s)) flagged.push_back(uint32_t((i * n + j) * n + k));
  }

  std::vector<uint8_t> refine_mask;
  std::vector<uint32_t> refine;
  std::vector<uint64_t> idx;
  for (int L = rc + 1; L <= rb; ++L) {
    const size_t np = size_t(1) << (L - 1);      // parent cells per axis
    const size_t sp = size_t(1) << (rb - L + 1);  // parent stride in final-grid indices
    const size_t s = sp / 2;                      // this level's stride
    const int d = (L == rb && opt.final_dilation >= 0) ? opt.final_dilation : opt.dilation;

    // Dilate the flagged parent cells.
    refine_mask.assign(np * np * np, 0);
    refine.clear();
    for (uint32_t cidx : flagged) {
      const long ci = long(cidx / (np * np)), cj = long((cidx / np) % np), ck = long(cidx % np);
      for (long a = std::max(0L, ci - d); a <= std::min(long(np) - 1, ci + d); ++a)
        for (long b = std::max(0L, cj - d); b <= std::min(long(np) - 1, cj + d); ++b)
          for (long e = std::max(0L, ck - d); e <= std::min(long(np) - 1, ck + d); ++e) {
            const size_t r = (size_t(a) * np + size_t(b)) * np + size_t(e);
            if (!refine_mask[r]) {
              refine_mask[r] = 1;
              refine.push_back(uint32_t(r));
            }
          }
    }
    std::sort(refine.begin(), refine.end());  // memory-friendly order, deterministic batches

    // Evaluate the 27 points of every refined parent cell.
    idx.clear();
    for (uint32_t r : refine) {
      const size_t base = lin(size_t(r / (np * np)) * sp, size_t((r / np) % np) * sp, size_t(r % np) * sp);
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          for (int e = 0; e < 3; ++e) {
            const size_t q = base + size_t(a) * s * MM + size_t(b) * s * M + size_t(e) * s;
            if (!test_and_set(g.evaluated_bits, q)) idx.push_back(q);
          }
    }
    std::sort(idx.begin(), idx.end());
    known += idx.size();
    eval.run(idx, known);
    g.points_per_level.push_back(idx.size());

    // Interpolate the level-L points that were not evaluated: z midpoints, then y, then x.
    const long n = long(np) * 2 + 1;  // points per axis at this level
#pragma omp parallel for schedule(static)
    for (long ui = 0; ui < n; ui += 2)
      for (long uj = 0; uj < n; uj += 2)
        for (long uk = 1; uk < n; uk += 2) {
          const size_t q = lin(size_t(ui) * s, size_t(uj) * s, size_t(uk) * s);
          if (!bit(g.evaluated_bits, q)) g.values[q] = 0.5f * (g.values[q - s] + g.values[q + s]);
        }
#pragma omp parallel for schedule(static)
    for (long ui = 0; ui < n; ui += 2)
      for (long uj = 1; uj < n; uj += 2)
        for (long uk = 0; uk < n; ++uk) {
          const size_t q = lin(size_t(ui) * s, size_t(uj) * s, size_t(uk) * s);
          if (!bit(g.evaluated_bits, q)) g.values[q] = 0.5f * (g.values[q - s * M] + g.values[q + s * M]);
        }
#pragma omp parallel for schedule(static)
    for (long ui = 1; ui < n; ui += 2)
      for (long uj = 0; uj < n; ++uj)
        for (long uk = 0; uk < n; ++uk) {
          const size_t q = lin(size_t(ui) * s, size_t(uj) * s, size_t(uk) * s);
          if (!bit(g.evaluated_bits, q)) g.values[q] = 0.5f * (g.values[q - s * MM] + g.values[q + s * MM]);
        }

    // Flag the level-L children of the refined cells.
    if (L < rb) {
      if (opt.scale_margin) margin = std::ldexp(opt.margin, rc - L);
      flagged.clear();
      const size_t nc = np * 2;
      for (uint32_t r : refine) {
        const size_t pi = r / (np * np), pj = (r / np) % np, pk = r % np;
        for (int c = 0; c < 8; ++c) {
          const size_t ci = 2 * pi + (c & 1), cj = 2 * pj + ((c >> 1) & 1), ck = 2 * pk + ((c >> 2) & 1);
          if (corner_flag(lin(ci * s, cj * s, ck * s), s)) flagged.push_back(uint32_t((ci * nc + cj) * nc + ck));
        }
      }
    }
  }
  if (opt.progress) opt.progress(g.points_evaluated, g.points_evaluated);
  return g;
}

double occupancy_iou(const GridValues& a, const GridValues& b) {
  if (a.values.size() != a.point_count() || b.values.size() != b.point_count() || a.M < 2 || b.M < 2)
    throw Error("occupancy_iou: grid without values");
  const GridValues& c = a.M <= b.M ? a : b;  // coarser
  const GridValues& f = a.M <= b.M ? b : a;
  if ((f.M - 1) % (c.M - 1) != 0) throw Error("occupancy_iou: grids of " + std::to_string(a.M) + " and " +
                                              std::to_string(b.M) + " points per axis do not nest");
  const int r = (f.M - 1) / (c.M - 1);
  size_t inter = 0, uni = 0;
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.M; ++j)
      for (int k = 0; k < c.M; ++k) {
        const bool x = c.at(i, j, k) >= 0.0f, y = f.at(i * r, j * r, k * r) >= 0.0f;
        inter += (x && y);
        uni += (x || y);
      }
  return uni ? double(inter) / double(uni) : 1.0;
}

}  // namespace cubeforge
