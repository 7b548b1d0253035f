// Owns mesh clean-up (weld, degenerate faces, small components, unreferenced vertices), smooth normals, pivots
// and mesh statistics (area, signed volume, watertightness, bbox). Pure C++, no Assimp.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <stdexcept>
#include <type_traits>

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

constexpr uint32_t kNone = UINT32_MAX;

// Uninitialised scratch memory that the steps of one clean-up reuse one after another: its pages are faulted in
// once. (At rb 8, fresh pages for a buffer per step cost several times the work done in them.)
class Scratch {
 public:
  // Makes room for `bytes`; the arrays handed out before are given up.
  void reserve(size_t bytes) {
    if (bytes > size_) {
      mem_.reset(new std::byte[bytes]);
      size_ = bytes;
    }
  }
  // `count` objects of a trivial type at byte `offset` (a multiple of 8), left uninitialised.
  template <class T>
  T* array(size_t offset, size_t count) {
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>);
    return new (mem_.get() + offset) T[count];
  }

 private:
  std::unique_ptr<std::byte[]> mem_;
  size_t size_ = 0;
};

inline size_t round8(size_t bytes) { return (bytes + 7) & ~size_t(7); }

// Weld: rep[v] = the lowest index whose key (bit patterns, or epsilon cells) equals v's. Vertices are visited in
// index order and looked up in an open-addressing table of 8-byte slots (vertex, 32-bit fingerprint of the key;
// a slot's key is recomputed from its vertex only when the fingerprints agree), so the first vertex of a key
// represents every later one, as a sort by key would make it. The slots of the next vertices are prefetched: the
// table is larger than the cache and the lookups are otherwise serialised on memory.
struct WeldSlot {
  uint32_t v, fp;
};

size_t weld_table_capacity(size_t n) {
  size_t cap = 16;
  while (cap < n + n / 2) cap <<= 1;
  return cap;
}

size_t weld_representatives(const Mesh& m, float epsilon, uint32_t* rep, Scratch& scratch) {
  const size_t n = m.positions.size();
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
    uint64_t h = uint64_t(k[0]) * 0x9e3779b97f4a7c15ULL ^ uint64_t(k[1]) * 0xc2b2ae3d27d4eb4fULL ^
                 uint64_t(k[2]) * 0x165667b19e3779f9ULL;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
  };
  const size_t cap = weld_table_capacity(n), mask = cap - 1;
  scratch.reserve(cap * sizeof(WeldSlot));
  WeldSlot* table = scratch.array<WeldSlot>(0, cap);
  std::fill_n(table, cap, WeldSlot{kNone, 0});
  constexpr size_t kAhead = 16;  // vertices whose keys and slots are in flight
  Key keys[kAhead];
  uint64_t hashes[kAhead];
  auto load = [&](size_t v) {
    const size_t q = v % kAhead;
    keys[q] = key_of(v);
    hashes[q] = hash_of(keys[q]);
    __builtin_prefetch(table + (hashes[q] & mask));
  };
  for (size_t v = 0; v < std::min(n, kAhead); ++v) load(v);
  size_t reps = 0;
  for (size_t v = 0; v < n; ++v) {
    const size_t q = v % kAhead;
    const Key k = keys[q];
    const uint64_t h = hashes[q];
    if (v + kAhead < n) load(v + kAhead);
    const uint32_t fp = uint32_t(h >> 32);
    size_t i = h & mask;
    while (table[i].v != kNone && (table[i].fp != fp || key_of(table[i].v) != k)) i = (i + 1) & mask;
    if (table[i].v == kNone) {
      table[i] = {uint32_t(v), fp};
      ++reps;
    }
    rep[v] = table[i].v;
  }
  return reps;
}

// Moves every vertex v with remap[v] != kNone to remap[v] (kept vertices keep their order, so remap[v] <= v and
// the move is in place); normals/colours that do not match the positions are dropped. Faces are not touched.
void compact_vertices(Mesh& m, const uint32_t* remap, size_t new_count) {
  const size_t n = m.positions.size();
  const bool hn = m.normals.size() == n, hc = m.colors.size() == n;
  for (size_t v = 0; v < n; ++v) {
    const uint32_t r = remap[v];
    if (r == kNone) continue;
    m.positions[r] = m.positions[v];
    if (hn) m.normals[r] = m.normals[v];
    if (hc) m.colors[r] = m.colors[v];
  }
  m.positions.resize(new_count);
  if (hn) m.normals.resize(new_count);
  else m.normals.clear();
  if (hc) m.colors.resize(new_count);
  else m.colors.clear();
}

void remap_faces(Mesh& m, const uint32_t* remap) {
  for (auto& t : m.triangles)
    for (auto& i : t) i = remap[i];
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

// A face's corner set as a key (corners distinct): corners rotated so the smallest comes first, then the other
// two sorted; `orient` says whether that sort swapped them.
struct FaceKey {
  uint32_t k[3];
  uint8_t orient;
};
inline FaceKey face_key(const std::array<uint32_t, 3>& t) {
  const int first = t[0] < t[1] && t[0] < t[2] ? 0 : t[1] < t[2] ? 1 : 2;
  const uint32_t r0 = t[first], r1 = t[(first + 1) % 3], r2 = t[(first + 2) % 3];
  return {{r0, std::min(r1, r2), std::max(r1, r2)}, uint8_t(r1 < r2 ? 0 : 1)};
}

// Union-find whose parents have lower indices (p[x] <= x), so a set's root is its lowest vertex; Rem's algorithm
// with splicing (stops as soon as both sides reach the same parent, which on a mesh is most of the time).
inline void unite(uint32_t* p, uint32_t a, uint32_t b) {
  while (p[a] != p[b]) {
    if (p[a] < p[b]) std::swap(a, b);
    if (p[a] == a) {
      p[a] = p[b];
      return;
    }
    const uint32_t up = p[a];
    p[a] = p[b];
    a = up;
  }
}

// What cleanup_mesh does for every face the degenerate pass keeps: joins its corners and marks them used.
struct JoinCorners {
  uint32_t* parent;
  uint8_t* used;
  void operator()(const std::array<uint32_t, 3>& t) const {
    unite(parent, t[0], t[1]);
    unite(parent, t[1], t[2]);
    used[t[0]] = used[t[1]] = used[t[2]] = 1;
  }
};

// remove_degenerate_faces, with `work` called on every valid face in order (`work_valid` false when faces were
// dropped after it saw them). Valid faces are compacted in place and chained per
// smallest corner (head: one per vertex, next: one per face); a face is compared with the earlier faces of its
// chain (a handful on a mesh), and only faces that share their corner set with another (none on a marching-cubes
// mesh) go through the sort that decides which copy stays. A chain longer than kMaxChain (a fan) stops comparing:
// all its faces go to the sort, which keeps the work linear.
template <class Work>
size_t remove_degenerate_faces(Mesh& m, uint32_t* head, uint32_t* next, const Work& work, bool& work_valid) {
  const size_t nf = m.triangles.size();
  constexpr uint32_t kEnd = 0x7fffffffu, kFlag = 0x80000000u;  // chain end; candidate face / saturated chain
  constexpr int kMaxChain = 64;
  if (nf >= kEnd) throw std::length_error("remove_degenerate_faces: too many faces");
  std::fill_n(head, m.positions.size(), kEnd);
  bool candidates = false;
  size_t out = 0;
  for (size_t f = 0; f < nf; ++f) {
    const auto t = m.triangles[f];
    if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2]) continue;
    const D3 a = d3(m.positions[t[0]]), b = d3(m.positions[t[1]]), c = d3(m.positions[t[2]]);
    const D3 n = cross(sub(b, a), sub(c, a));
    if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
    const FaceKey key = face_key(t);
    uint32_t& h = head[key.k[0]];
    uint32_t mark = h & kFlag;
    if (!mark) {
      int len = 0;
      for (uint32_t g = h; g != kEnd; g = next[g] & ~kFlag) {
        if (++len > kMaxChain) {
          for (uint32_t q = h; q != kEnd; q = next[q] & ~kFlag) next[q] |= kFlag;
          h |= kFlag;
          mark = kFlag;
          break;
        }
        const FaceKey o = face_key(m.triangles[g]);
        if (o.k[1] == key.k[1] && o.k[2] == key.k[2]) {
          next[g] |= kFlag;
          mark = kFlag;
        }
      }
    }
    candidates |= mark != 0;
    next[out] = (h & ~kFlag) | mark;
    h = uint32_t(out) | (h & kFlag);
    m.triangles[out++] = t;
    work(t);
  }
  work_valid = true;
  if (candidates) {
    // Same-orientation copies: keep the first. Opposite orientations (a fold) cancel pairwise: only the first face
    // of the surplus orientation stays, if any. Winners lose their flag; flagged faces go.
    struct Item {
      FaceKey key;
      uint32_t face;
    };
    std::vector<Item> items;
    for (uint32_t g = 0; g < out; ++g)
      if (next[g] & kFlag) items.push_back({face_key(m.triangles[g]), g});
    std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
      for (int q = 0; q < 3; ++q)
        if (x.key.k[q] != y.key.k[q]) return x.key.k[q] < y.key.k[q];
      return x.face < y.face;
    });
    for (size_t i = 0; i < items.size();) {
      size_t j = i;
      size_t count[2] = {0, 0};
      uint32_t first[2] = {kNone, kNone};
      while (j < items.size() && std::equal(items[j].key.k, items[j].key.k + 3, items[i].key.k)) {
        const uint8_t o = items[j].key.orient;
        if (!count[o]++) first[o] = items[j].face;
        ++j;
      }
      if (count[0] != count[1]) next[first[count[1] > count[0]]] &= ~kFlag;
      i = j;
    }
    size_t kept = 0;
    for (size_t g = 0; g < out; ++g)
      if (!(next[g] & kFlag)) m.triangles[kept++] = m.triangles[g];
    work_valid = kept == out;
    out = kept;
  }
  m.triangles.resize(out);
  return nf - out;
}

// Vertices joined by faces, labelled once (cleanup_mesh counts the components and filters the small ones from the
// same labelling). `label` (one per vertex) is the component index, numbered by lowest vertex, or kNone for a
// vertex of no face.
struct Components {
  uint32_t* label;
  size_t count = 0;
};

// Turns a finished union-find (`p`, see unite) into labels in place: in index order a parent (lower) is already
// labelled.
Components label_sets(uint32_t* p, const uint8_t* used, size_t n) {
  Components c{p};
  for (size_t v = 0; v < n; ++v) {
    if (!used[v]) p[v] = kNone;
    else p[v] = p[v] == v ? uint32_t(c.count++) : p[p[v]];
  }
  return c;
}

Components label_components(const Mesh& m, uint32_t* p, std::vector<uint8_t>& used) {
  const size_t n = m.positions.size();
  used.assign(n, 0);
  std::iota(p, p + n, 0u);
  const JoinCorners join{p, used.data()};
  for (const auto& t : m.triangles) join(t);
  return label_sets(p, used.data(), n);
}

// The components to drop (bbox diagonal < ratio * the diagonal of every face's vertices); empty when none is.
std::vector<uint8_t> small_components(const Mesh& m, const Components& c, float ratio) {
  if (m.triangles.empty() || ratio <= 0.0f || (c.count < 2 && ratio <= 1.0f)) return {};  // one piece stays
  std::vector<std::array<float, 6>> box(c.count, {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY});
  for (size_t v = 0; v < m.positions.size(); ++v) {
    if (c.label[v] == kNone) continue;
    auto& b = box[c.label[v]];
    for (int a = 0; a < 3; ++a) {
      b[a] = std::min(b[a], m.positions[v][a]);
      b[3 + a] = std::max(b[3 + a], m.positions[v][a]);
    }
  }
  // The boxes' union is the bbox of every used vertex (only a zero's sign can differ, which no difference sees).
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  for (const auto& b : box)
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], b[a]);
      hi[a] = std::max(hi[a], b[3 + a]);
    }
  const double diag = std::sqrt(double(hi[0] - lo[0]) * (hi[0] - lo[0]) + double(hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                double(hi[2] - lo[2]) * (hi[2] - lo[2]));
  std::vector<uint8_t> drop(c.count, 0);
  bool any = false;
  for (size_t k = 0; k < c.count; ++k) {
    const auto& b = box[k];
    double d2 = 0;
    for (int a = 0; a < 3; ++a) d2 += double(b[3 + a] - b[a]) * double(b[3 + a] - b[a]);
    if (std::sqrt(d2) < double(ratio) * diag) drop[k] = any = true;
  }
  if (!any) drop.clear();
  return drop;
}

// A vertex normal from its sum of face cross products; (0, 0, 1) for none.
inline Vec3 unit_normal(const D3& s) {
  const double l = std::sqrt(dot(s, s));
  if (l > 0) return {float(s[0] / l), float(s[1] / l), float(s[2] / l)};
  return {0.0f, 0.0f, 1.0f};
}

// Area-weighted normals into m.normals; `acc` holds one D3 per vertex (zeroed here).
void compute_vertex_normals(Mesh& m, D3* acc) {
  std::fill_n(acc, m.positions.size(), D3{0, 0, 0});
  for (const auto& t : m.triangles) {
    const D3 a = d3(m.positions[t[0]]), b = d3(m.positions[t[1]]), c = d3(m.positions[t[2]]);
    const D3 n = cross(sub(b, a), sub(c, a));  // |n| = 2 * area
    for (auto i : t)
      for (int q = 0; q < 3; ++q) acc[i][q] += n[q];
  }
  m.normals.resize(m.positions.size());
  for (size_t v = 0; v < m.positions.size(); ++v) m.normals[v] = unit_normal(acc[v]);
}

}  // namespace

size_t merge_duplicate_vertices(Mesh& m, float epsilon) {
  const size_t n = m.positions.size();
  if (n == 0) return 0;
  Scratch scratch;
  std::vector<uint32_t> rep(n);
  const size_t reps = weld_representatives(m, epsilon, rep.data(), scratch);
  if (reps == n) return 0;
  // New index of every representative; faces go to their corners' representatives.
  std::vector<uint32_t> remap(n, kNone);
  uint32_t next = 0;
  for (size_t v = 0; v < n; ++v)
    if (rep[v] == v) remap[v] = next++;
  for (auto& t : m.triangles)
    for (auto& i : t) i = remap[rep[i]];
  compact_vertices(m, remap.data(), reps);
  return n - reps;
}

size_t remove_degenerate_faces(Mesh& m) {
  std::vector<uint32_t> head(m.positions.size()), next(m.triangles.size());
  bool unused;
  return remove_degenerate_faces(m, head.data(), next.data(), [](const auto&) {}, unused);
}

size_t count_components(const Mesh& m) {
  if (m.triangles.empty()) return 0;
  std::vector<uint32_t> label(m.positions.size());
  std::vector<uint8_t> used;
  return label_components(m, label.data(), used).count;
}

size_t remove_small_components(Mesh& m, float ratio) {
  if (m.triangles.empty() || ratio <= 0.0f) return 0;
  std::vector<uint32_t> label(m.positions.size());
  std::vector<uint8_t> used;
  const Components c = label_components(m, label.data(), used);
  const std::vector<uint8_t> drop = small_components(m, c, ratio);
  if (drop.empty()) return 0;
  size_t out = 0;
  for (const auto& t : m.triangles)
    if (!drop[label[t[0]]]) m.triangles[out++] = t;
  m.triangles.resize(out);
  return size_t(std::count(drop.begin(), drop.end(), 1));
}

size_t remove_unreferenced_vertices(Mesh& m) {
  const size_t n = m.positions.size();
  std::vector<uint32_t> remap(n, kNone);
  for (const auto& t : m.triangles)
    for (auto i : t) remap[i] = 0;
  uint32_t next = 0;
  for (size_t v = 0; v < n; ++v)
    if (remap[v] == 0) remap[v] = next++;
  if (next == n) return 0;
  compact_vertices(m, remap.data(), next);
  remap_faces(m, remap.data());
  return n - next;
}

void compute_vertex_normals(Mesh& m) {
  std::unique_ptr<D3[]> acc(new D3[m.positions.size()]);
  compute_vertex_normals(m, acc.get());
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

// The steps above fused, with the same results. The weld only maps faces to representatives (their positions are
// the ones the weld would keep, and index order is kept, so every later decision is the same); the degenerate pass
// also joins the kept faces' corners; one compaction at the end drops the merged, unreferenced and filtered
// vertices together. One per-vertex array holds the representatives, then the union-find and component labels,
// then the new indices; one scratch block holds the weld table, then the face chains, then the normal sums. (When
// the degenerate pass drops copies after joining them, never on a marching-cubes mesh, the components are
// labelled again from the faces left.)
CleanupReport cleanup_mesh(Mesh& m, const CleanupOptions& o) {
  CleanupReport r;
  const size_t n = m.positions.size(), nf = m.triangles.size();
  Scratch scratch;
  scratch.reserve(std::max({o.merge_vertices ? weld_table_capacity(n) * sizeof(WeldSlot) : 0,
                            o.remove_degenerate ? round8(n * 4) + nf * 4 : 0,
                            o.compute_normals ? n * sizeof(D3) : 0}));
  std::unique_ptr<uint32_t[]> map(new uint32_t[n]);
  std::vector<uint8_t> used;
  size_t reps = n;
  if (o.merge_vertices && n > 0) {
    reps = weld_representatives(m, o.merge_epsilon, map.get(), scratch);
    r.vertices_merged = n - reps;
    if (r.vertices_merged) remap_faces(m, map.get());
  }
  bool joined = false;  // map/used hold the kept faces' union-find
  if (o.remove_degenerate) {
    std::iota(map.get(), map.get() + n, 0u);
    used.assign(n, 0);
    r.degenerate_faces_removed =
        remove_degenerate_faces(m, scratch.array<uint32_t>(0, n), scratch.array<uint32_t>(round8(n * 4), nf),
                                JoinCorners{map.get(), used.data()}, joined);
  }

  // Components; then map[v] = v's new index, or kNone for a merged, unreferenced or filtered vertex.
  size_t kept = 0;
  if (!m.triangles.empty()) {
    const Components c = joined ? label_sets(map.get(), used.data(), n) : label_components(m, map.get(), used);
    r.components = c.count;
    const std::vector<uint8_t> drop = small_components(m, c, o.min_component_ratio);
    r.components_removed = size_t(std::count(drop.begin(), drop.end(), 1));
    for (size_t v = 0; v < n; ++v) {
      const uint32_t k = c.label[v];
      map[v] = k != kNone && (drop.empty() || !drop[k]) ? uint32_t(kept++) : kNone;
    }
  } else {
    std::fill_n(map.get(), n, kNone);  // no face: every vertex goes
  }
  r.unreferenced_vertices_removed = reps - kept;
  if (kept != n) {
    compact_vertices(m, map.get(), kept);
    size_t out = 0;
    for (const auto& t : m.triangles)
      if (map[t[0]] != kNone) m.triangles[out++] = {map[t[0]], map[t[1]], map[t[2]]};
    r.faces_removed_with_components = m.triangles.size() - out;
    m.triangles.resize(out);
  }
  if (o.compute_normals) compute_vertex_normals(m, scratch.array<D3>(0, kept));
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
