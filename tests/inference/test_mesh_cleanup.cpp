// Mesh clean-up against a plain reference: cleanup_mesh (fused weld / degenerate / component passes, one compaction)
// and each step must give, bit for bit, what the straightforward definition gives: a weld by sorting keys, duplicate
// faces grouped in a std::map, a recursive union-find, compaction in index order, normals summed in face order.
// Meshes: marching cubes of analytic multi-component fields and of random fields (near-zero node values: welds,
// zero-area faces, folds), the same with injected copies, folds, coincident and shuffled vertices and attributes,
// and the shipped default model's surface. This file is compiled with the library's flags (tests/inference/
// CMakeLists.txt), so the reference's floating-point expressions contract into FMAs as the library's do.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubeforge/analytic_fields.h"
#include "cubeforge/cube3d.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/shape_model.h"
#include "test_paths.h"

using namespace cubeforge;

namespace {

namespace ref {

using D3 = std::array<double, 3>;
D3 d3(const Vec3& v) { return {double(v[0]), double(v[1]), double(v[2])}; }
D3 sub(const D3& a, const D3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
D3 cross(const D3& a, const D3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
constexpr uint32_t kGone = UINT32_MAX;

// Keeps vertex v at index to[v] (kGone: dropped); attributes that do not match the positions are cleared.
void move_vertices(Mesh& m, const std::vector<uint32_t>& to, size_t count) {
  Mesh out;
  out.positions.resize(count);
  const bool hn = m.normals.size() == m.positions.size(), hc = m.colors.size() == m.positions.size();
  if (hn) out.normals.resize(count);
  if (hc) out.colors.resize(count);
  for (size_t v = 0; v < m.positions.size(); ++v) {
    if (to[v] == kGone) continue;
    out.positions[to[v]] = m.positions[v];
    if (hn) out.normals[to[v]] = m.normals[v];
    if (hc) out.colors[to[v]] = m.colors[v];
  }
  out.triangles = m.triangles;
  for (auto& t : out.triangles)
    for (auto& i : t) i = to[i];
  m = std::move(out);
}

size_t weld(Mesh& m, float eps) {
  const size_t n = m.positions.size();
  using Key = std::array<int64_t, 3>;
  std::vector<std::pair<Key, uint32_t>> keys(n);
  for (uint32_t v = 0; v < n; ++v) {
    for (int a = 0; a < 3; ++a) {
      if (eps > 0.0f) {
        keys[v].first[a] = int64_t(std::floor(double(m.positions[v][a]) / double(eps)));
      } else {
        const float f = m.positions[v][a] + 0.0f;
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        keys[v].first[a] = bits;
      }
    }
    keys[v].second = v;
  }
  std::sort(keys.begin(), keys.end());
  std::vector<uint32_t> rep(n);
  for (size_t s = 0; s < n;) {
    size_t e = s;
    while (e < n && keys[e].first == keys[s].first) rep[keys[e++].second] = keys[s].second;
    s = e;
  }
  std::vector<uint32_t> to(n, kGone);
  uint32_t next = 0;
  for (size_t v = 0; v < n; ++v)
    if (rep[v] == v) to[v] = next++;
  if (next == n) return 0;
  for (auto& t : m.triangles)
    for (auto& i : t) i = rep[i];
  move_vertices(m, to, next);
  return n - next;
}

size_t degenerate(Mesh& m) {
  std::map<std::array<uint32_t, 3>, std::vector<std::pair<size_t, int>>> groups;  // corner set -> (face, orient)
  for (size_t f = 0; f < m.triangles.size(); ++f) {
    const auto t = m.triangles[f];
    if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2]) continue;
    const D3 a = d3(m.positions[t[0]]), b = d3(m.positions[t[1]]), c = d3(m.positions[t[2]]);
    const D3 n = cross(sub(b, a), sub(c, a));
    if (n[0] == 0.0 && n[1] == 0.0 && n[2] == 0.0) continue;
    auto r = t;
    while (r[0] > r[1] || r[0] > r[2]) r = {r[1], r[2], r[0]};
    const int orient = r[1] < r[2] ? 0 : 1;
    if (orient) std::swap(r[1], r[2]);
    groups[r].push_back({f, orient});
  }
  std::vector<uint8_t> keep(m.triangles.size(), 0);
  for (const auto& [corners, faces] : groups) {
    size_t count[2] = {0, 0}, first[2] = {0, 0};
    for (const auto& [f, o] : faces)
      if (!count[o]++) first[o] = f;
    if (count[0] != count[1]) keep[first[count[1] > count[0]]] = 1;  // copies: the first; folds cancel
  }
  std::vector<std::array<uint32_t, 3>> out;
  for (size_t f = 0; f < m.triangles.size(); ++f)
    if (keep[f]) out.push_back(m.triangles[f]);
  const size_t removed = m.triangles.size() - out.size();
  m.triangles = std::move(out);
  return removed;
}

uint32_t root(std::vector<uint32_t>& p, uint32_t x) { return p[x] == x ? x : p[x] = root(p, p[x]); }

// Root (lowest vertex of the component) per vertex, kGone for a vertex of no face.
std::vector<uint32_t> components(const Mesh& m) {
  std::vector<uint32_t> p(m.positions.size());
  for (uint32_t v = 0; v < p.size(); ++v) p[v] = v;
  for (const auto& t : m.triangles)
    for (int q = 1; q < 3; ++q) {
      const uint32_t a = root(p, t[0]), b = root(p, t[q]);
      p[std::max(a, b)] = std::min(a, b);
    }
  std::vector<uint32_t> label(p.size(), kGone);
  for (const auto& t : m.triangles)
    for (auto i : t) label[i] = root(p, i);
  return label;
}

void cleanup(Mesh& m, const CleanupOptions& o, CleanupReport& r) {
  r = {};
  if (o.merge_vertices && !m.positions.empty()) r.vertices_merged = weld(m, o.merge_epsilon);
  if (o.remove_degenerate) r.degenerate_faces_removed = degenerate(m);
  if (!m.triangles.empty()) {
    const std::vector<uint32_t> label = components(m);
    std::map<uint32_t, std::array<float, 6>> box;  // root -> bbox
    Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
    for (size_t v = 0; v < label.size(); ++v) {
      if (label[v] == kGone) continue;
      auto [it, fresh] = box.try_emplace(label[v], std::array<float, 6>{INFINITY, INFINITY, INFINITY, -INFINITY,
                                                                        -INFINITY, -INFINITY});
      for (int a = 0; a < 3; ++a) {
        it->second[a] = std::min(it->second[a], m.positions[v][a]);
        it->second[3 + a] = std::max(it->second[3 + a], m.positions[v][a]);
        lo[a] = std::min(lo[a], m.positions[v][a]);
        hi[a] = std::max(hi[a], m.positions[v][a]);
      }
    }
    r.components = box.size();
    const float ratio = o.min_component_ratio;
    if (ratio > 0.0f && !(box.size() < 2 && ratio <= 1.0f)) {
      const double diag = std::sqrt(double(hi[0] - lo[0]) * (hi[0] - lo[0]) +
                                    double(hi[1] - lo[1]) * (hi[1] - lo[1]) + double(hi[2] - lo[2]) * (hi[2] - lo[2]));
      std::map<uint32_t, bool> drop;
      for (const auto& [root, b] : box) {
        double d2 = 0;
        for (int a = 0; a < 3; ++a) d2 += double(b[3 + a] - b[a]) * double(b[3 + a] - b[a]);
        drop[root] = std::sqrt(d2) < double(ratio) * diag;
        r.components_removed += drop[root];
      }
      std::vector<std::array<uint32_t, 3>> out;
      for (const auto& t : m.triangles)
        if (!drop[label[t[0]]]) out.push_back(t);
      r.faces_removed_with_components = m.triangles.size() - out.size();
      m.triangles = std::move(out);
    }
  }
  std::vector<uint32_t> to(m.positions.size(), kGone);
  for (const auto& t : m.triangles)
    for (auto i : t) to[i] = 0;
  uint32_t next = 0;
  for (auto& x : to)
    if (x == 0) x = next++;
  if (next != m.positions.size()) {
    r.unreferenced_vertices_removed = m.positions.size() - next;
    move_vertices(m, to, next);
  }
  if (o.compute_normals) {
    std::vector<D3> acc(m.positions.size(), D3{0, 0, 0});
    for (const auto& t : m.triangles) {
      const D3 a = d3(m.positions[t[0]]), b = d3(m.positions[t[1]]), c = d3(m.positions[t[2]]);
      const D3 n = cross(sub(b, a), sub(c, a));
      for (auto i : t)
        for (int q = 0; q < 3; ++q) acc[i][q] += n[q];
    }
    m.normals.resize(m.positions.size());
    for (size_t v = 0; v < acc.size(); ++v) {
      const double l = std::sqrt(acc[v][0] * acc[v][0] + acc[v][1] * acc[v][1] + acc[v][2] * acc[v][2]);
      m.normals[v] = l > 0 ? Vec3{float(acc[v][0] / l), float(acc[v][1] / l), float(acc[v][2] / l)}
                           : Vec3{0.0f, 0.0f, 1.0f};
    }
  }
  r.pivot_translation = apply_pivot(m, o.pivot);  // unchanged by the fused clean-up; its own test is in Cleanup.*
}

}  // namespace ref

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

void expect_same(const Mesh& got, const Mesh& want, const std::string& what) {
  EXPECT_TRUE(same_bits(got.positions, want.positions)) << what << ": positions";
  EXPECT_TRUE(same_bits(got.normals, want.normals)) << what << ": normals";
  EXPECT_TRUE(same_bits(got.colors, want.colors)) << what << ": colours";
  EXPECT_TRUE(same_bits(got.triangles, want.triangles)) << what << ": faces (" << got.triangles.size() << " vs "
                                                        << want.triangles.size() << ")";
}

// cleanup_mesh and the single steps against the reference, for several option sets.
void check_against_reference(const Mesh& input, const std::string& name) {
  CleanupOptions pipeline;  // the shape stage's
  pipeline.merge_epsilon = 1e-5f;
  CleanupOptions exact_weld;
  exact_weld.pivot = Pivot::BaseCentre;
  CleanupOptions keep_all;
  keep_all.merge_epsilon = 1e-5f;
  keep_all.min_component_ratio = 0.0f;
  keep_all.pivot = Pivot::Centre;
  CleanupOptions coarse;
  coarse.merge_epsilon = 0.02f;
  coarse.min_component_ratio = 0.5f;
  CleanupOptions no_degenerate;
  no_degenerate.merge_epsilon = 1e-3f;
  no_degenerate.remove_degenerate = false;
  no_degenerate.compute_normals = false;
  CleanupOptions no_weld;
  no_weld.merge_vertices = false;
  CleanupOptions nothing;
  nothing.merge_vertices = nothing.remove_degenerate = nothing.compute_normals = false;
  nothing.min_component_ratio = 0.0f;
  const std::pair<const char*, CleanupOptions> sets[] = {{"pipeline", pipeline}, {"exact weld", exact_weld},
                                                          {"keep all", keep_all}, {"coarse", coarse},
                                                          {"no degenerate", no_degenerate}, {"no weld", no_weld},
                                                          {"nothing", nothing}};
  for (const auto& [set, o] : sets) {
    const std::string what = name + ", " + set;
    Mesh got = input, want = input;
    const CleanupReport r = cleanup_mesh(got, o);
    CleanupReport w;
    ref::cleanup(want, o, w);
    expect_same(got, want, what);
    EXPECT_EQ(r.vertices_merged, w.vertices_merged) << what;
    EXPECT_EQ(r.degenerate_faces_removed, w.degenerate_faces_removed) << what;
    EXPECT_EQ(r.components, w.components) << what;
    EXPECT_EQ(r.components_removed, w.components_removed) << what;
    EXPECT_EQ(r.faces_removed_with_components, w.faces_removed_with_components) << what;
    EXPECT_EQ(r.unreferenced_vertices_removed, w.unreferenced_vertices_removed) << what;
    EXPECT_EQ(r.pivot_translation, w.pivot_translation) << what;
  }
  // The steps on their own.
  Mesh got = input, want = input;
  EXPECT_EQ(merge_duplicate_vertices(got, 1e-5f), ref::weld(want, 1e-5f)) << name;
  expect_same(got, want, name + ", merge_duplicate_vertices");
  EXPECT_EQ(remove_degenerate_faces(got), ref::degenerate(want)) << name;
  expect_same(got, want, name + ", remove_degenerate_faces");
  const std::vector<uint32_t> label = ref::components(want);
  std::set<uint32_t> roots(label.begin(), label.end());
  roots.erase(ref::kGone);
  EXPECT_EQ(count_components(got), roots.size()) << name;
  Mesh unref = got, unref_want = got;
  remove_unreferenced_vertices(unref);
  CleanupOptions only_unref;
  only_unref.merge_vertices = only_unref.remove_degenerate = only_unref.compute_normals = false;
  only_unref.min_component_ratio = 0.0f;
  CleanupReport ignored;
  ref::cleanup(unref_want, only_unref, ignored);
  expect_same(unref, unref_want, name + ", remove_unreferenced_vertices");
  compute_vertex_normals(unref);
  CleanupOptions only_normals = only_unref;
  only_normals.compute_normals = true;
  ref::cleanup(unref_want, only_normals, ignored);
  expect_same(unref, unref_want, name + ", compute_vertex_normals");
}

// Copies, folds, repeated corners, coincident and near-coincident vertices, unused vertices, a shuffled vertex
// order and per-vertex attributes.
Mesh inject(Mesh m, uint32_t seed, int count, bool shuffle, bool attributes) {
  std::mt19937 rng(seed);
  const size_t nf = m.triangles.size();
  for (int i = 0; i < count && nf; ++i) {
    const auto t = m.triangles[rng() % nf];
    switch (rng() % 6) {
      case 0: m.triangles.push_back(t); break;
      case 1: m.triangles.push_back({t[0], t[2], t[1]}); break;
      case 2: m.triangles.push_back({t[0], t[0], t[1]}); break;
      case 3:
        m.positions.push_back(m.positions[t[0]]);
        m.triangles.push_back({uint32_t(m.positions.size() - 1), t[1], t[2]});
        break;
      case 4: {
        Vec3 p = m.positions[t[0]];
        p[rng() % 3] += float(int(rng() % 41) - 20) * 1e-6f;
        m.positions.push_back(p);
        m.triangles.push_back({t[0], uint32_t(m.positions.size() - 1), t[2]});
        break;
      }
      default: m.positions.push_back({float(rng() % 100) * 0.01f, 0.5f, -0.25f});  // used by no face
    }
  }
  for (size_t i = m.triangles.size(); i > 1; --i)
    if (rng() % 4 == 0) std::swap(m.triangles[i - 1], m.triangles[rng() % i]);
  if (shuffle) {
    std::vector<uint32_t> perm(m.positions.size());
    for (uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<Vec3> p(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) p[perm[i]] = m.positions[i];
    m.positions = std::move(p);
    for (auto& t : m.triangles)
      for (auto& i : t) i = perm[i];
  }
  if (attributes) {
    m.colors.resize(m.positions.size());
    for (auto& c : m.colors) c = {float(rng() % 7), 0.5f, 1.0f};
    m.normals.resize(seed % 2 ? m.positions.size() : 3);  // matching, or not (then dropped by a compaction)
    for (auto& c : m.normals) c = {0.0f, float(rng() % 5), 1.0f};
  }
  return m;
}

Mesh random_field_mesh(int M, uint32_t seed, bool reverse) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  GridValues g;
  g.M = M;
  g.values.resize(size_t(M) * M * M);
  for (auto& v : g.values) {
    v = u(rng);
    if (rng() % 5 == 0) v = float(int(rng() % 3) - 1) * 1e-9f;  // vertices at (almost) a node: welds, slivers
  }
  MarchingCubesOptions mo;
  mo.reverse_winding = reverse;
  return marching_cubes(g, mo);
}

FieldFn several_parts() {
  FieldFn f = union_field(torus_field(0.55f, 0.2f), box_field(0.15f, 0.7f, 0.15f));
  f = union_field(f, sphere_field(0.1f, {0.8f, 0.8f, 0.8f}));
  return union_field(f, sphere_field(0.04f, {-0.8f, 0.8f, -0.8f}));
}

}  // namespace

TEST(CleanupReference, MarchingCubesMeshesMatchThePlainDefinition) {
  const Mesh parts = marching_cubes(evaluate_dense(several_parts(), 7));
  ASSERT_GT(parts.face_count(), 30000u);
  EXPECT_EQ(count_components(parts), 4u);
  check_against_reference(parts, "analytic rb 7");
  check_against_reference(marching_cubes(evaluate_dense(sphere_field(0.8f), 5)), "sphere rb 5");
  for (uint32_t s = 0; s < 4; ++s)
    check_against_reference(random_field_mesh(12 + 9 * s, s, s % 2), "random field " + std::to_string(s));
}

TEST(CleanupReference, InjectedDefectsMatchThePlainDefinition) {
  const Mesh parts = marching_cubes(evaluate_dense(several_parts(), 6));
  const Mesh torus = marching_cubes(evaluate_dense(torus_field(0.6f, 0.25f), 6));
  check_against_reference(inject(torus, 7, 300, true, false), "torus rb 6 + defects");
  for (uint32_t s = 0; s < 3; ++s) {
    check_against_reference(inject(parts, s, 40 + 400 * s, s > 0, s == 2), "analytic rb 6 + defects " + std::to_string(s));
    check_against_reference(inject(random_field_mesh(20, 10 + s, s == 1), 20 + s, 300, s != 1, s != 0),
                            "random field + defects " + std::to_string(s));
  }
  Mesh empty;
  check_against_reference(empty, "empty");
  Mesh no_faces;
  no_faces.positions = {{0, 0, 0}, {1, 0, 0}};
  check_against_reference(no_faces, "no faces");
  Mesh all_degenerate;
  all_degenerate.positions = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  all_degenerate.triangles = {{0, 1, 1}, {0, 1, 2}};
  check_against_reference(all_degenerate, "only degenerate faces");
}

// A fan: one vertex is the smallest corner of hundreds of faces (copies and folds among them), past the length at
// which the duplicate-face pass stops comparing chains and sends the whole chain to its sort.
TEST(CleanupReference, LongFanMatchesThePlainDefinition) {
  Mesh fan;
  fan.positions.push_back({0, 0, 0});
  for (int i = 0; i <= 400; ++i) fan.positions.push_back({std::cos(i * 0.015f), std::sin(i * 0.015f), 0.1f * (i % 3)});
  for (uint32_t i = 1; i < 400; ++i) {
    fan.triangles.push_back({0, i, i + 1});
    if (i % 3 == 0) fan.triangles.push_back({0, i + 1, i});  // fold
    if (i % 5 == 0) fan.triangles.push_back({i, i + 1, 0});  // copy
  }
  check_against_reference(fan, "fan");
}

// The shipped default model's surface (the chair of reference_tokens.json, tokens → adaptive grid at rb 6 → marching
// cubes): a real model output, with its thin parts and small stray components.
TEST(CleanupReference, DefaultModelMeshMatchesThePlainDefinition) {
  const std::filesystem::path dir = std::filesystem::path(cftest::source_dir()) / "assets" / "default-model";
  if (!std::filesystem::exists(dir / "config.yaml") || !std::filesystem::exists(dir / "reference_tokens.json"))
    GTEST_SKIP() << "no default model at " << dir;
  std::ifstream f(dir / "reference_tokens.json");
  const auto doc = nlohmann::json::parse(f);
  const auto tokens = doc["cases"][0]["tokens"].get<std::vector<int>>();
  auto model = Cube3D::load(ModelFiles::from_directory(dir.string()));
  auto occupancy = model->shape_model().occupancy(model->shape_model().decode_tokens(tokens));
  const Mesh mesh = marching_cubes(occupancy->grid_adaptive(6, adaptive_options(MeshOptions{})));
  ASSERT_GT(mesh.face_count(), 1000u);
  check_against_reference(mesh, "default model rb 6");
}
