// Owns surface sampling and the symmetric Chamfer distance (a small implicit kd-tree for nearest neighbours).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "cubeforge/mesh_metrics.h"
#include "face_geometry.h"

namespace cubeforge {

namespace {

// Balanced kd-tree stored implicitly: the median of range [lo, hi) sits at mid = (lo + hi) / 2, split on `axis`.
class KdTree {
 public:
  explicit KdTree(const std::vector<Vec3>& pts) : p_(pts) {
    axis_.assign(p_.size(), 0);
    build(0, p_.size());
  }

  // Squared distance to the nearest point.
  double nearest2(const Vec3& q) const {
    double best = std::numeric_limits<double>::infinity();
    search(0, p_.size(), q, best);
    return best;
  }

 private:
  void build(size_t lo, size_t hi) {
    if (hi - lo <= 1) return;
    float mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = lo; i < hi; ++i)
      for (int a = 0; a < 3; ++a) {
        mn[a] = std::min(mn[a], p_[i][a]);
        mx[a] = std::max(mx[a], p_[i][a]);
      }
    int ax = 0;
    for (int a = 1; a < 3; ++a)
      if (mx[a] - mn[a] > mx[ax] - mn[ax]) ax = a;
    const size_t mid = (lo + hi) / 2;
    std::nth_element(p_.begin() + lo, p_.begin() + mid, p_.begin() + hi,
                     [ax](const Vec3& x, const Vec3& y) { return x[ax] < y[ax]; });
    axis_[mid] = uint8_t(ax);
    build(lo, mid);
    build(mid + 1, hi);
  }

  void search(size_t lo, size_t hi, const Vec3& q, double& best) const {
    if (hi <= lo) return;
    const size_t mid = (lo + hi) / 2;
    const Vec3& p = p_[mid];
    const double dx = double(p[0]) - q[0], dy = double(p[1]) - q[1], dz = double(p[2]) - q[2];
    best = std::min(best, dx * dx + dy * dy + dz * dz);
    if (hi - lo == 1) return;
    const int ax = axis_[mid];
    const double d = double(q[ax]) - double(p[ax]);
    // Near half first, so that `best` is small when the far half is tested.
    if (d < 0) {
      search(lo, mid, q, best);
      if (d * d < best) search(mid + 1, hi, q, best);
    } else {
      search(mid + 1, hi, q, best);
      if (d * d < best) search(lo, mid, q, best);
    }
  }

  std::vector<Vec3> p_;
  std::vector<uint8_t> axis_;
};

void directed(const std::vector<Vec3>& from, const KdTree& to, double& mean, double& mx) {
  double sum = 0.0, m = 0.0;
#pragma omp parallel for reduction(+ : sum) reduction(max : m) schedule(static)
  for (long i = 0; i < long(from.size()); ++i) {
    const double d = std::sqrt(to.nearest2(from[size_t(i)]));
    sum += d;
    m = std::max(m, d);
  }
  mean = from.empty() ? 0.0 : sum / double(from.size());
  mx = m;
}

inline double unit(std::mt19937_64& r) { return double(r() >> 11) * (1.0 / 9007199254740992.0); }
using mesh_detail::face_cross;

}  // namespace

std::vector<Vec3> sample_surface(const Mesh& m, size_t n, uint64_t seed, std::vector<Vec3>* face_normals) {
  std::vector<Vec3> out;
  if (face_normals) face_normals->clear();
  if (m.triangles.empty() || n == 0) return out;
  std::vector<double> cdf(m.triangles.size());
  double total = 0.0;
  for (size_t f = 0; f < m.triangles.size(); ++f) {
    const auto [x, y, z] = face_cross(m, m.triangles[f]);
    total += 0.5 * std::sqrt(x * x + y * y + z * z);
    cdf[f] = total;
  }
  std::mt19937_64 rng(seed);
  out.reserve(n);
  for (size_t s = 0; s < n; ++s) {
    size_t f = size_t(std::upper_bound(cdf.begin(), cdf.end(), unit(rng) * total) - cdf.begin());
    f = std::min(f, cdf.size() - 1);
    double r1 = unit(rng), r2 = unit(rng);
    if (r1 + r2 > 1.0) {
      r1 = 1.0 - r1;
      r2 = 1.0 - r2;
    }
    const auto& t = m.triangles[f];
    const Vec3 &a = m.positions[t[0]], &b = m.positions[t[1]], &c = m.positions[t[2]];
    Vec3 p;
    for (int q = 0; q < 3; ++q) p[q] = float(a[q] + r1 * (double(b[q]) - a[q]) + r2 * (double(c[q]) - a[q]));
    out.push_back(p);
    if (face_normals) {
      const auto [x, y, z] = face_cross(m, t);
      const double len = std::sqrt(x * x + y * y + z * z);
      face_normals->push_back(len > 0 ? Vec3{float(x / len), float(y / len), float(z / len)} : Vec3{0.f, 0.f, 0.f});
    }
  }
  return out;
}

ChamferResult chamfer_distance(const std::vector<Vec3>& a, const std::vector<Vec3>& b) {
  ChamferResult r;
  r.points_a = a.size();
  r.points_b = b.size();
  if (a.empty() && b.empty()) return r;
  if (a.empty() || b.empty()) {
    r.mean_a_to_b = r.mean_b_to_a = r.chamfer = r.hausdorff = std::numeric_limits<double>::infinity();
    return r;
  }
  const KdTree ta(a), tb(b);
  double ma = 0, mb = 0;
  directed(a, tb, r.mean_a_to_b, ma);
  directed(b, ta, r.mean_b_to_a, mb);
  r.chamfer = 0.5 * (r.mean_a_to_b + r.mean_b_to_a);
  r.hausdorff = std::max(ma, mb);
  return r;
}

ChamferResult chamfer_distance(const Mesh& a, const Mesh& b, size_t samples, uint64_t seed) {
  if (samples == 0) return chamfer_distance(a.positions, b.positions);
  return chamfer_distance(sample_surface(a, samples, seed), sample_surface(b, samples, seed + 1));
}

}  // namespace cubeforge
