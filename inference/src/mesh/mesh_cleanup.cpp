// Owns mesh clean-up (weld, degenerate faces, small components, unreferenced vertices), smooth normals, pivots
// and mesh statistics (area, signed volume, watertightness, bbox). Pure C++, no Assimp.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>

#include "cubeforge/mesh_cleanup.h"

namespace cubeforge {

namespace {

using D3 = std::array<double, 3>;
inline D3 d3(const Vec3& v) { return {double(v[0]), double(v[1]), double(v[2])}; }
inline D3 sub(const D3& a, const D3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
inline D3 cross(const D3& a, const D3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
inline double dot(const D3& a, const D3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

struct UnionFind {
  std::vector<uint32_t> p;
  explicit UnionFind(size_t n) : p(n) { std::iota(p.begin(), p.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
  }
  void unite(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) p[std::max(a, b)] = std::min(a, b);
  }
};

// Keeps vertex v iff keep[v]; remaps faces (faces must only reference kept vertices).
void compact_vertices(Mesh& m, const std::vector<uint32_t>& remap, size_t new_count) {
  std::vector<Vec3> pos(new_count), nrm, col;
  const bool hn = m.normals.size() == m.positions.size(), hc = m.colors.size() == m.positions.size();
  if (hn) nrm.resize(new_count);
  if (hc) col.resize(new_count);
  for (size_t v = 0; v < m.positions.size(); ++v) {
    const uint32_t r = remap[v];
    if (r == UINT32_MAX) continue;
    pos[r] = m.positions[v];
    if (hn) nrm[r] = m.normals[v];
    if (hc) col[r] = m.colors[v];
  }
  for (auto& t : m.triangles)
    for (auto& i : t) i = remap[i];
  m.positions = std::move(pos);
  m.normals = std::move(nrm);
  m.colors = std::move(col);
}

void bbox_of(const Mesh& m, const std::vector<uint8_t>* used, Vec3& lo, Vec3& hi) {
  lo = {INFINITY, INFINITY, INFINITY};
  hi = {-INFINITY, -INFINITY, -INFINITY};
  for (size_t v = 0; v < m.positions.size(); ++v) {
    if (used && !(*used)[v]) continue;
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], m.positions[v][a]);
      hi[a] = std::max(hi[a], m.positions[v][a]);
    }
  }
  if (lo[0] > hi[0]) lo = hi = {0, 0, 0};
}

}  // namespace

size_t merge_duplicate_vertices(Mesh& m, float epsilon) {
  const size_t n = m.positions.size();
  if (n == 0) return 0;
  // Vertices are visited in index order and hashed on their key (bit patterns, or epsilon cells): the first vertex
  // of a key becomes the representative of every later one (the lowest index of the group), as a sort by key would
  // make it. Linear time instead of the sort's n log n.
  using Key = std::array<int64_t, 3>;
  auto key_of = [&](size_t v) {
    Key k;
    for (int a = 0; a < 3; ++a) {
      if (epsilon > 0.0f) {
        k[a] = int64_t(std::floor(double(m.positions[v][a]) / double(epsilon)));
      } else {
        const float f = m.positions[v][a] + 0.0f;  // -0 -> +0
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        k[a] = bits;
      }
    }
    return k;
  };
  auto hash_of = [](const Key& k) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int64_t x : k) {
      h ^= uint64_t(x) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    }
    return h ^ (h >> 33);
  };
  // Open addressing with 8-byte slots (vertex, 32-bit fingerprint of the key): the table stays cache-sized, and a
  // slot's key is recomputed from its vertex only when the fingerprints agree.
  struct Slot {
    uint32_t v = UINT32_MAX, fp = 0;
  };
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  std::vector<Slot> table(cap);
  std::vector<uint32_t> rep(n);
  for (size_t v = 0; v < n; ++v) {
    const Key k = key_of(v);
    const uint64_t h = hash_of(k);
    const uint32_t fp = uint32_t(h >> 32);
    size_t i = h & (cap - 1);
    while (table[i].v != UINT32_MAX && (table[i].fp != fp || key_of(table[i].v) != k)) i = (i + 1) & (cap - 1);
    if (table[i].v == UINT32_MAX) table[i] = {uint32_t(v), fp};
    rep[v] = table[i].v;
  }
  std::vector<uint32_t> remap(n, UINT32_MAX);
  uint32_t next = 0;
  for (size_t v = 0; v < n; ++v)
    if (rep[v] == v) remap[v] = next++;
  for (size_t v = 0; v < n; ++v) remap[v] = remap[rep[v]];
  const size_t removed = n - next;
  if (removed == 0) return 0;
  // Vertices that are not representatives are dropped: map them away before compaction.
  std::vector<uint32_t> keep_map(n, UINT32_MAX);
  for (size_t v = 0; v < n; ++v)
    if (rep[v] == v) keep_map[v] = remap[v];
  for (auto& t : m.triangles)
    for (auto& i : t) i = rep[i];
  compact_vertices(m, keep_map, next);
  return removed;
}

size_t remove_degenerate_faces(Mesh& m) {
  // Each valid face gets a key: its corners rotated so the smallest comes first, then the other two sorted; the
  // orientation is whether that sort swapped them. Copies of a corner set share their smallest corner, so the faces
  // are bucketed by it (a counting sort, stable in face order) and only each bucket (a handful of faces) is sorted.
  struct Item {
    uint32_t k[3];
    uint32_t face;
    uint8_t orient;
  };
  const size_t nf = m.triangles.size();
  std::vector<Item> items;
  items.reserve(nf);
  for (size_t f = 0; f < nf; ++f) {
    const auto t = m.triangles[f];
    if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2]) continue;
    const D3 a = d3(m.positions[t[0]]), b = d3(m.positions[t[1]]), c = d3(m.positions[t[2]]);
    const D3 n = cross(sub(b, a), sub(c, a));
    if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
    auto r = t;
    while (r[0] > r[1] || r[0] > r[2]) r = {r[1], r[2], r[0]};
    const uint8_t orient = r[1] < r[2] ? 0 : 1;
    if (orient) std::swap(r[1], r[2]);
    items.push_back({{r[0], r[1], r[2]}, uint32_t(f), orient});
  }
  const size_t nv = m.positions.size();
  std::vector<uint32_t> start(nv + 1, 0);
  for (const auto& it : items) ++start[it.k[0] + 1];
  for (size_t v = 0; v < nv; ++v) start[v + 1] += start[v];
  std::vector<uint32_t> order(items.size());
  {
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (uint32_t i = 0; i < items.size(); ++i) order[fill[items[i].k[0]]++] = i;
  }
  auto less = [&](uint32_t x, uint32_t y) {
    const Item &a = items[x], &b = items[y];
    if (a.k[1] != b.k[1]) return a.k[1] < b.k[1];
    if (a.k[2] != b.k[2]) return a.k[2] < b.k[2];
    return a.face < b.face;
  };
  // Same-orientation copies: keep the first. Opposite orientations (a fold) cancel pairwise: only the first face of
  // the surplus orientation stays, if any.
  std::vector<uint8_t> keep(nf, 0);
  for (size_t v = 0; v < nv; ++v) {
    const auto b0 = order.begin() + start[v], b1 = order.begin() + start[v + 1];
    if (b1 - b0 > 1) std::sort(b0, b1, less);
    for (auto i = b0; i < b1;) {
      auto j = i;
      size_t count[2] = {0, 0};
      uint32_t first[2] = {UINT32_MAX, UINT32_MAX};
      while (j < b1 && items[*j].k[1] == items[*i].k[1] && items[*j].k[2] == items[*i].k[2]) {
        const uint8_t o = items[*j].orient;
        if (!count[o]++) first[o] = items[*j].face;
        ++j;
      }
      if (count[0] > count[1]) keep[first[0]] = 1;
      else if (count[1] > count[0]) keep[first[1]] = 1;
      i = j;
    }
  }
  size_t out = 0;
  for (size_t f = 0; f < nf; ++f)
    if (keep[f]) m.triangles[out++] = m.triangles[f];
  const size_t removed = nf - out;
  m.triangles.resize(out);
  return removed;
}

namespace {

// Vertices joined by faces, labelled once: cleanup_mesh counts the components and filters the small ones from the
// same labelling (it used to build the union-find twice).
struct VertexComponents {
  UnionFind uf;
  std::vector<uint8_t> used;  // referenced by a face
  size_t count = 0;
  explicit VertexComponents(const Mesh& m) : uf(m.positions.size()), used(m.positions.size(), 0) {
    for (const auto& t : m.triangles) {
      uf.unite(t[0], t[1]);
      uf.unite(t[1], t[2]);
      used[t[0]] = used[t[1]] = used[t[2]] = 1;
    }
    for (size_t v = 0; v < used.size(); ++v) count += used[v] && uf.find(uint32_t(v)) == v;
  }
};

size_t remove_small_components(Mesh& m, float ratio, VertexComponents& c) {
  if (m.triangles.empty() || ratio <= 0.0f || (c.count < 2 && ratio <= 1.0f)) return 0;  // one piece stays
  const size_t n = m.positions.size();
  Vec3 lo, hi;
  bbox_of(m, &c.used, lo, hi);
  const double diag = std::sqrt(double(hi[0] - lo[0]) * (hi[0] - lo[0]) + double(hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                double(hi[2] - lo[2]) * (hi[2] - lo[2]));
  std::vector<std::array<float, 6>> box(n, {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY});
  for (size_t v = 0; v < n; ++v) {
    if (!c.used[v]) continue;
    auto& b = box[c.uf.find(uint32_t(v))];
    for (int a = 0; a < 3; ++a) {
      b[a] = std::min(b[a], m.positions[v][a]);
      b[3 + a] = std::max(b[3 + a], m.positions[v][a]);
    }
  }
  std::vector<uint8_t> drop(n, 0);
  size_t removed = 0;
  for (size_t v = 0; v < n; ++v) {
    if (!c.used[v] || c.uf.find(uint32_t(v)) != v) continue;
    const auto& b = box[v];
    double d2 = 0;
    for (int a = 0; a < 3; ++a) d2 += double(b[3 + a] - b[a]) * double(b[3 + a] - b[a]);
    if (std::sqrt(d2) < double(ratio) * diag) {
      drop[v] = 1;
      ++removed;
    }
  }
  if (!removed) return 0;
  size_t out = 0;
  for (const auto& t : m.triangles)
    if (!drop[c.uf.find(t[0])]) m.triangles[out++] = t;
  m.triangles.resize(out);
  return removed;
}

}  // namespace

size_t count_components(const Mesh& m) { return m.triangles.empty() ? 0 : VertexComponents(m).count; }

size_t remove_small_components(Mesh& m, float ratio) {
  if (m.triangles.empty() || ratio <= 0.0f) return 0;
  VertexComponents c(m);
  return remove_small_components(m, ratio, c);
}

size_t remove_unreferenced_vertices(Mesh& m) {
  const size_t n = m.positions.size();
  std::vector<uint32_t> remap(n, UINT32_MAX);
  for (const auto& t : m.triangles)
    for (auto i : t) remap[i] = 0;
  uint32_t next = 0;
  for (size_t v = 0; v < n; ++v)
    if (remap[v] == 0) remap[v] = next++;
  if (next == n) return 0;
  compact_vertices(m, remap, next);
  return n - next;
}

void compute_vertex_normals(Mesh& m) {
  std::vector<D3> acc(m.positions.size(), D3{0, 0, 0});
  for (const auto& t : m.triangles) {
    const D3 a = d3(m.positions[t[0]]), b = d3(m.positions[t[1]]), c = d3(m.positions[t[2]]);
    const D3 n = cross(sub(b, a), sub(c, a));  // |n| = 2 * area
    for (auto i : t)
      for (int q = 0; q < 3; ++q) acc[i][q] += n[q];
  }
  m.normals.resize(m.positions.size());
  for (size_t v = 0; v < acc.size(); ++v) {
    const double l = std::sqrt(dot(acc[v], acc[v]));
    if (l > 0) m.normals[v] = {float(acc[v][0] / l), float(acc[v][1] / l), float(acc[v][2] / l)};
    else m.normals[v] = {0.0f, 0.0f, 1.0f};
  }
}

Vec3 apply_pivot(Mesh& m, Pivot pivot) {
  if (pivot == Pivot::None || m.positions.empty()) return {0, 0, 0};
  Vec3 lo, hi;
  bbox_of(m, nullptr, lo, hi);
  Vec3 t{-(lo[0] + hi[0]) * 0.5f, -(lo[1] + hi[1]) * 0.5f, -(lo[2] + hi[2]) * 0.5f};
  if (pivot == Pivot::BaseCentre) t[1] = -lo[1];
  for (auto& p : m.positions)
    for (int a = 0; a < 3; ++a) p[a] += t[a];
  return t;
}

CleanupReport cleanup_mesh(Mesh& m, const CleanupOptions& o) {
  CleanupReport r;
  if (o.merge_vertices) r.vertices_merged = merge_duplicate_vertices(m, o.merge_epsilon);
  if (o.remove_degenerate) r.degenerate_faces_removed = remove_degenerate_faces(m);
  if (!m.triangles.empty()) {
    VertexComponents comps(m);
    r.components = comps.count;
    const size_t f0 = m.triangles.size();
    r.components_removed = remove_small_components(m, o.min_component_ratio, comps);
    r.faces_removed_with_components = f0 - m.triangles.size();
  }
  r.unreferenced_vertices_removed = remove_unreferenced_vertices(m);
  if (o.compute_normals) compute_vertex_normals(m);
  r.pivot_translation = apply_pivot(m, o.pivot);
  return r;
}

double MeshStats::bbox_diagonal() const {
  double d2 = 0;
  for (int a = 0; a < 3; ++a) d2 += double(bbox_max[a] - bbox_min[a]) * double(bbox_max[a] - bbox_min[a]);
  return std::sqrt(d2);
}

MeshStats mesh_stats(const Mesh& m) {
  MeshStats s;
  s.vertices = m.positions.size();
  s.faces = m.triangles.size();
  if (m.triangles.empty()) return s;
  std::vector<uint8_t> used(m.positions.size(), 0);
  for (const auto& t : m.triangles) {
    const D3 a = d3(m.positions[t[0]]), b = d3(m.positions[t[1]]), c = d3(m.positions[t[2]]);
    const D3 n = cross(sub(b, a), sub(c, a));
    s.area += 0.5 * std::sqrt(dot(n, n));
    s.volume += dot(a, cross(b, c)) / 6.0;
    used[t[0]] = used[t[1]] = used[t[2]] = 1;
  }
  bbox_of(m, &used, s.bbox_min, s.bbox_max);
  s.components = count_components(m);

  // Undirected edge key with the direction as the lowest bit.
  std::vector<std::pair<uint64_t, uint8_t>> e;
  e.reserve(m.triangles.size() * 3);
  for (const auto& t : m.triangles)
    for (int q = 0; q < 3; ++q) {
      const uint32_t a = t[q], b = t[(q + 1) % 3];
      e.push_back({(uint64_t(std::min(a, b)) << 32) | std::max(a, b), uint8_t(a < b)});
    }
  std::sort(e.begin(), e.end());
  for (size_t i = 0; i < e.size();) {
    size_t j = i;
    size_t fwd = 0;
    while (j < e.size() && e[j].first == e[i].first) fwd += e[j++].second;
    const size_t cnt = j - i;
    if (cnt == 1) ++s.boundary_edges;
    else if (!(cnt == 2 && fwd == 1)) ++s.non_manifold_edges;
    i = j;
  }
  s.watertight = s.boundary_edges == 0 && s.non_manifold_edges == 0;
  return s;
}

}  // namespace cubeforge
