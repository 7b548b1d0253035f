// Tests of mesh export/import (every format round-trips vertex and face counts, atomic writes, clear errors)
// and of decimation to a face cap.
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cubeforge/analytic_fields.h"
#include "cubeforge/error.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/mesh_io.h"
#include "cubeforge/mesh_metrics.h"

namespace fs = std::filesystem;
using namespace cubeforge;

namespace {

fs::path temp_dir(const std::string& name) {
  auto p = fs::temp_directory_path() / ("cubeforge_meshio_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

Mesh torus_mesh(int rb = 5) {
  Mesh m = marching_cubes(evaluate_dense(torus_field(0.6f, 0.25f), rb));
  cleanup_mesh(m);
  return m;
}

std::vector<std::string> files_in(const fs::path& d) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(d)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST(MeshIo, EveryFormatRoundTripsCounts) {
  const fs::path dir = temp_dir("roundtrip");
  Mesh m = torus_mesh();
  ASSERT_TRUE(mesh_stats(m).watertight);
  m.colors.assign(m.vertex_count(), Vec3{0.9f, 0.5f, 0.1f});
  const MeshStats ref = mesh_stats(m);
  for (MeshFormat f : export_formats()) {
    const fs::path p = dir / (std::string("torus") + format_extension(f));
    ASSERT_NO_THROW(export_mesh(m, p.string())) << p;
    ASSERT_TRUE(fs::exists(p)) << p;
    Mesh back = import_mesh(p.string());
    EXPECT_EQ(back.vertex_count(), m.vertex_count()) << p;
    EXPECT_EQ(back.face_count(), m.face_count()) << p;
    const MeshStats s = mesh_stats(back);
    EXPECT_TRUE(s.watertight) << p;
    EXPECT_NEAR(s.volume, ref.volume, 1e-3 * ref.volume) << p;  // orientation and geometry survive
    EXPECT_EQ(back.normals.size(), back.vertex_count()) << p;
    EXPECT_LT(chamfer_distance(m, back, 0).hausdorff, 1e-4) << p;
  }
  // Companion files land beside the main file under its stem; no temporary is left behind.
  const auto names = files_in(dir);
  const std::vector<std::string> expect = {"torus.bin", "torus.fbx", "torus.glb", "torus.gltf", "torus.mtl",
                                           "torus.obj", "torus.ply", "torus.stl"};
  EXPECT_EQ(names, expect);
  fs::remove_all(dir);
}

TEST(MeshIo, OverwriteAndFormatOverride) {
  const fs::path dir = temp_dir("overwrite");
  Mesh m = torus_mesh(4);
  const fs::path p = dir / "shape.glb";
  { std::ofstream(p) << "old"; }
  export_mesh(m, p.string());
  EXPECT_EQ(import_mesh(p.string()).face_count(), m.face_count());
  ExportOptions o;
  o.format = MeshFormat::Ply;
  const fs::path q = dir / "shape.bin3d";
  export_mesh(m, q.string(), o);
  EXPECT_GT(fs::file_size(q), 0u);
  fs::remove_all(dir);
}

TEST(MeshIo, ClearErrorsAndNoFileLeft) {
  const fs::path dir = temp_dir("errors");
  Mesh m = torus_mesh(4);
  // Missing directory.
  try {
    export_mesh(m, (dir / "nope" / "x.glb").string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  // Parent is a regular file.
  { std::ofstream(dir / "file") << "x"; }
  EXPECT_THROW(export_mesh(m, (dir / "file" / "x.obj").string()), Error);
  // Unknown extension, empty mesh.
  EXPECT_THROW(export_mesh(m, (dir / "x.dae").string()), Error);
  EXPECT_THROW(export_mesh(Mesh{}, (dir / "x.glb").string()), Error);
  // Unwritable directory (only meaningful when not running as root).
  const fs::path ro = dir / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0) EXPECT_THROW(export_mesh(m, (ro / "x.glb").string()), Error);
  fs::permissions(ro, fs::perms::owner_all);
  EXPECT_TRUE(files_in(ro).empty());
  EXPECT_EQ(files_in(dir), std::vector<std::string>({"file", "ro"}));
  // Import errors.
  EXPECT_THROW(import_mesh((dir / "missing.glb").string()), Error);
  EXPECT_THROW(import_mesh((dir / "file").string()), Error);
  fs::remove_all(dir);
}

std::string base64(const void* data, size_t n) {
  static const char* T = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* b = static_cast<const unsigned char*>(data);
  std::string o;
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < n ? uint32_t(b[i + 1]) << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
    o += T[v >> 18];
    o += T[(v >> 12) & 63];
    o += i + 1 < n ? T[(v >> 6) & 63] : '=';
    o += i + 2 < n ? T[v & 63] : '=';
  }
  return o;
}

TEST(MeshIo, ImportMergesMeshesAndAppliesNodeTransforms) {
  const fs::path dir = temp_dir("import");
  // OBJ with two objects (two meshes, one a quad): merged, triangulated.
  const fs::path p = dir / "two.obj";
  {
    std::ofstream f(p);
    f << "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
      << "o b\nv 0 0 2\nv 1 0 2\nv 0 1 2\nv 1 1 2\nf 4 5 7 6\n";
  }
  Mesh m = import_mesh(p.string());
  EXPECT_EQ(m.face_count(), 3u);
  EXPECT_EQ(m.vertex_count(), 7u);
  // glTF: a triangle in a child node translated by (0, 0, 5) under a parent scaled by 2.
  const float tri[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  const fs::path g = dir / "nodes.gltf";
  {
    std::ofstream f(g);
    f << R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],)"
      << R"("nodes":[{"children":[1],"scale":[2,2,2]},{"mesh":0,"translation":[0,0,5]}],)"
      << R"("meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}],)"
      << R"("accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}],)"
      << R"("bufferViews":[{"buffer":0,"byteLength":36}],)"
      << R"("buffers":[{"byteLength":36,"uri":"data:application/octet-stream;base64,)" << base64(tri, 36)
      << R"("}]})";
  }
  Mesh t = import_mesh(g.string());
  ASSERT_EQ(t.vertex_count(), 3u);
  ASSERT_EQ(t.face_count(), 1u);
  float maxx = -1;
  for (const auto& v : t.positions) {
    EXPECT_FLOAT_EQ(v[2], 10.0f);
    maxx = std::max(maxx, v[0]);
  }
  EXPECT_FLOAT_EQ(maxx, 2.0f);
  fs::remove_all(dir);
}

TEST(Decimate, RespectsCapAndStaysClose) {
  Mesh m = marching_cubes(evaluate_dense(torus_field(0.6f, 0.25f), 7));
  cleanup_mesh(m);
  const Mesh orig = m;
  const double baseline = chamfer_distance(orig, orig, 20000).chamfer;  // sampling noise of the metric
  for (size_t cap : {20000u, 5000u, 500u}) {
    Mesh d = orig;
    DecimateOptions o;
    o.max_faces = cap;
    const DecimateResult r = decimate_mesh(d, o);
    EXPECT_LE(r.faces_after, cap);
    EXPECT_EQ(r.faces_after, d.face_count());
    EXPECT_GT(r.faces_after, cap / 2) << cap;
    EXPECT_EQ(d.normals.size(), d.vertex_count());
    const MeshStats s = mesh_stats(d);
    const double cd = chamfer_distance(orig, d, 20000).chamfer;
    std::printf("[ decimate ] cap %6zu -> %6zu faces (from %zu), error %.4f, sloppy %d, watertight %d "
                "(%zu non-manifold edges), chamfer %.4f (metric noise %.4f)\n",
                cap, r.faces_after, r.faces_before, r.error, int(r.sloppy), int(s.watertight), s.non_manifold_edges,
                cd, baseline);
    EXPECT_FALSE(r.sloppy);
    EXPECT_TRUE(s.watertight) << cap << ": " << s.boundary_edges << " boundary, " << s.non_manifold_edges;
    EXPECT_LT(cd, baseline + 0.005) << cap;
  }
  Mesh small = orig;
  DecimateOptions big;
  big.max_faces = orig.face_count() + 1;
  EXPECT_EQ(decimate_mesh(small, big).faces_after, orig.face_count());
  EXPECT_EQ(small.triangles, orig.triangles);
}

// A marching-cubes surface of rb 8's size (~260 K faces) goes through the parallel cell pre-reduction: as close to
// the original as one pass over the whole mesh, still watertight, and the same result on any number of threads.
TEST(Decimate, CellsMatchOnePassAndDoNotDependOnThreads) {
  Mesh m = marching_cubes(evaluate_dense(torus_field(0.6f, 0.25f), 8));
  cleanup_mesh(m);
  const Mesh orig = m;
  ASSERT_GE(orig.face_count(), 200000u);
  const double noise = chamfer_distance(orig, orig, 20000).chamfer;
  DecimateOptions o;
  o.max_faces = 20000;
  DecimateOptions one = o;
  one.cells = 1;
  Mesh a = orig, b = orig, c = orig;
  const DecimateResult ra = decimate_mesh(a, one);
  const DecimateResult rb = decimate_mesh(b, o);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  decimate_mesh(c, o);
  omp_set_num_threads(threads);
  EXPECT_EQ(ra.cells, 0);
  EXPECT_EQ(rb.cells, 8);
  EXPECT_LE(rb.faces_after, 20000u);
  EXPECT_GT(rb.faces_after, 19000u);
  EXPECT_FALSE(rb.sloppy);
  EXPECT_TRUE(mesh_stats(b).watertight);
  EXPECT_EQ(b.normals.size(), b.vertex_count());
  const ChamferResult da = chamfer_distance(orig, a, 20000), db = chamfer_distance(orig, b, 20000);
  std::printf("[ decimate ] %zu faces -> one pass %zu (chamfer %.5f, Hausdorff %.5f), 8 cells %zu (chamfer %.5f, "
              "Hausdorff %.5f), metric noise %.5f\n",
              orig.face_count(), a.face_count(), da.chamfer, da.hausdorff, b.face_count(), db.chamfer, db.hausdorff,
              noise);
  EXPECT_LT(db.chamfer - noise, 1.1 * (da.chamfer - noise) + 1e-4);  // the error decimation adds: within one pass's
  EXPECT_LT(db.hausdorff, 1.25 * da.hausdorff);                      // no local defect at the cells' seams
  EXPECT_EQ(b.triangles, c.triangles);
  EXPECT_EQ(b.positions, c.positions);
}

// Cells forced onto a small mesh (fewer faces than some cells get): no empty-cell fault, the cap still holds.
TEST(Decimate, CellsOnASmallMesh) {
  Mesh m = marching_cubes(evaluate_dense(sphere_field(0.7f), 4));
  cleanup_mesh(m);
  ASSERT_GT(m.face_count(), 100u);
  ASSERT_LT(m.face_count(), 2048u);
  DecimateOptions o;
  o.max_faces = 40;
  o.cells = 2048;  // more cells than faces: some are empty
  o.cells_min_faces = 0;
  const DecimateResult r = decimate_mesh(m, o);
  EXPECT_EQ(r.cells, 2048);
  EXPECT_LE(m.face_count(), 40u);
  EXPECT_GT(m.face_count(), 0u);
}
