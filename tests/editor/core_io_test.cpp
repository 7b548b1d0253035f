// Editor core: scene save/load round trip, atomic save under injected failures, bad scene files, mesh
// import/export round trips through Assimp, picking, recovery files, settings (written by the background writer).
#include <gtest/gtest.h>

#include "core/autosaver.h"
#include "core/bvh.h"
#include "core/document.h"
#include "core/settings.h"
#include "core_test_util.h"
#include "slurp.h"
#include "write_gate.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace cubeforge::editor;
namespace fs = std::filesystem;
using cftest::slurp;

namespace {

void build_sample(Document& doc) {
  EntityId a = doc.insert_part(PartKind::Block);
  doc.insert_part(PartKind::Cylinder, Vec3{3, 0, 0});
  Entity m;
  m.name = "Tetra";
  m.mesh = cftest::tetra();
  m.color = {0.2f, 0.4f, 0.6f};
  m.transform = {{1, 2, 3}, {10, 20, 30}, {1, 2, 1}};
  EntityId t = doc.add_entity(m);
  Entity dup = m;
  dup.id = kNoEntity;
  dup.name = "Tetra copy";  // same mesh: stored once
  doc.add_entity(dup);
  doc.selection().set({a, t});
  EntityId g = doc.group_selection();
  doc.rename(g, "My Model");
  doc.modify(a, "Hide", [](Entity& e) { e.visible = false; e.anchored = false; });
}

}  // namespace

TEST(SceneIo, SaveLoadRoundTrip) {
  cftest::TempDir dir;
  Log log(false);
  Document doc(log);
  build_sample(doc);
  std::string path = dir / "level.cfscene";
  SaveStats st = doc.save(path);
  EXPECT_EQ(st.meshes_written, 1u);
  EXPECT_FALSE(doc.dirty());
  EXPECT_TRUE(fs::exists(dir / "level_meshes"));
  // Human-readable document.
  std::string text = slurp(path);
  EXPECT_NE(text.find("\"cubeforge.scene\""), std::string::npos);
  EXPECT_NE(text.find("\"My Model\""), std::string::npos);
  EXPECT_NE(text.find("primitive:block"), std::string::npos);

  Document back(log);
  back.open(path);
  ASSERT_EQ(back.scene().size(), doc.scene().size());
  for (size_t i = 0; i < doc.scene().size(); ++i) {
    const Entity& x = doc.scene().entities()[i];
    const Entity& y = back.scene().entities()[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.parent, y.parent);
    EXPECT_EQ(x.transform, y.transform);
    EXPECT_EQ(x.color, y.color);
    EXPECT_EQ(x.visible, y.visible);
    EXPECT_EQ(x.anchored, y.anchored);
    EXPECT_EQ(x.is_group, y.is_group);
    EXPECT_EQ(x.mesh_source, y.mesh_source);
    ASSERT_EQ(!x.mesh, !y.mesh);
    if (x.mesh) {
      EXPECT_EQ(x.mesh->triangles, y.mesh->triangles);
      ASSERT_EQ(x.mesh->positions.size(), y.mesh->positions.size());
      for (size_t v = 0; v < x.mesh->positions.size(); ++v)
        for (int k = 0; k < 3; ++k) EXPECT_NEAR(x.mesh->positions[v][k], y.mesh->positions[v][k], 1e-6);
      EXPECT_EQ(x.mesh->colors.size(), y.mesh->colors.size());
    }
  }
  // Both tetras share one loaded mesh; new ids continue after the saved ones.
  EXPECT_EQ(back.scene().find_by_name("Tetra")->mesh, back.scene().find_by_name("Tetra copy")->mesh);
  EXPECT_GE(back.scene().next_id(), doc.scene().next_id());
  EXPECT_FALSE(back.dirty());
  EXPECT_FALSE(back.history().can_undo());
  // Saving again reuses the mesh file.
  EXPECT_EQ(back.save(path).meshes_reused, 1u);
}

TEST(SceneIo, AtomicSaveSurvivesInjectedFailure) {
  cftest::TempDir dir;
  Log log(false);
  Document doc(log);
  build_sample(doc);
  std::string path = dir / "level.cfscene";
  doc.save(path);
  std::string good = slurp(path);
  doc.insert_part(PartKind::Wedge);
  for (const char* stage : {"write", "rename"}) {
    cubeforge::fileio::FaultHook hook = [&](const std::string& s, const std::string& p) { return !(s == stage && p == path); };
    EXPECT_THROW(doc.save(path, hook), cubeforge::Error) << stage;
    EXPECT_EQ(slurp(path), good) << "scene changed after a failed save at " << stage;
    EXPECT_TRUE(doc.dirty());
    for (auto& f : fs::directory_iterator(dir.path))
      EXPECT_EQ(f.path().filename().string().find(".tmp-"), std::string::npos) << "temp left: " << f.path();
  }
  Document back(log);
  back.open(path);  // the old scene still loads
  EXPECT_EQ(back.scene().size(), 5u);
  doc.save(path);
  back.open(path);
  EXPECT_EQ(back.scene().size(), 6u);
}

TEST(SceneIo, SaveErrorsAreClear) {
  cftest::TempDir dir;
  Log log(false);
  Document doc(log);
  doc.insert_part(PartKind::Block);
  try {
    doc.save(dir / "no/such/dir/x.cfscene");
    FAIL() << "expected an error";
  } catch (const cubeforge::Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  if (::geteuid() != 0) {  // root ignores permissions
    fs::path ro = dir.path / "ro";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THROW(doc.save((ro / "x.cfscene").string()), cubeforge::Error);
  }
}

TEST(SceneIo, MissingMeshBecomesPlaceholderAndKeepsReference) {
  cftest::TempDir dir;
  Log log(false);
  Document doc(log);
  build_sample(doc);
  std::string path = dir / "level.cfscene";
  doc.save(path);
  fs::remove_all(dir / "level_meshes");
  Document back(log);
  back.open(path);
  EXPECT_EQ(back.scene().size(), 5u);
  const Entity* t = back.scene().find_by_name("Tetra");
  ASSERT_TRUE(t && t->mesh);
  EXPECT_EQ(t->mesh->triangles.size(), 12u);  // placeholder block
  bool warned = false;
  for (auto& l : log.snapshot()) warned |= l.level == LogLevel::Warning && l.text.find("Tetra") != std::string::npos;
  EXPECT_TRUE(warned);
  // Re-saving keeps the original reference instead of the placeholder.
  std::string path2 = dir / "level.cfscene";
  back.save(path2);
  EXPECT_NE(slurp(path2).find("level_meshes/"), std::string::npos);
}

TEST(SceneIo, CorruptSceneIsRejectedAndCurrentDocumentKept) {
  cftest::TempDir dir;
  Log log(false);
  Document doc(log);
  doc.insert_part(PartKind::Block);
  std::ofstream(dir / "bad.cfscene") << "{ this is not json";
  EXPECT_THROW(doc.open(dir / "bad.cfscene"), cubeforge::Error);
  std::ofstream(dir / "other.cfscene") << R"({"format":"something-else"})";
  EXPECT_THROW(doc.open(dir / "other.cfscene"), cubeforge::Error);
  std::ofstream(dir / "newer.cfscene") << R"({"format":"cubeforge.scene","version":99,"entities":[]})";
  EXPECT_THROW(doc.open(dir / "newer.cfscene"), cubeforge::Error);
  std::ofstream(dir / "badent.cfscene") << R"({"format":"cubeforge.scene","version":1,"entities":[{"name":"x"}]})";
  EXPECT_THROW(doc.open(dir / "badent.cfscene"), cubeforge::Error);
  std::ofstream(dir / "cycle.cfscene")
      << R"({"format":"cubeforge.scene","version":1,"entities":[{"id":1,"parent":2},{"id":2,"parent":1}]})";
  EXPECT_NO_THROW(doc.open(dir / "cycle.cfscene"));
  EXPECT_EQ(doc.scene().size(), 2u);
  EXPECT_EQ(doc.scene().find(1)->parent, kNoEntity);
}

TEST(SceneIo, JsonFileErrorsNameTheFileAndTheReason) {
  cftest::TempDir dir;
  const std::string missing = dir / "nowhere.cfscene";
  try {
    read_json_file(missing, "scene");
    ADD_FAILURE() << "a missing file was read";
  } catch (const cubeforge::Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open scene " + missing + ": No such file or directory");
  }
  const std::string bad = dir / "bad.json";
  std::ofstream(bad) << "[1, 2,";
  try {
    read_json_file(bad, "script");
    ADD_FAILURE() << "invalid JSON was parsed";
  } catch (const cubeforge::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("script " + bad + " is not valid JSON: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("line 1"), std::string::npos) << "the parser's position: " << msg;
  }
  EXPECT_THROW(read_json_file(dir.path.string(), "scene"), cubeforge::Error);  // a directory, not a file
  std::ofstream(dir / "ok.json") << R"({"a": [1, 2]})";
  EXPECT_EQ(read_json_file(dir / "ok.json", "scene")["a"][1], 2);
}

class ExportRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(ExportRoundTrip, GeometrySurvives) {
  cftest::TempDir dir;
  Log log(false);
  Document doc(log);
  EntityId a = doc.insert_part(PartKind::Block);
  Transform t = doc.scene().find(a)->transform;
  t.position = {5, 1, -2};
  t.rotation = {0, 45, 0};
  doc.set_transform(a, t);
  Entity m;
  m.name = "Tetra";
  m.mesh = cftest::tetra();
  m.transform.position = {-3, 0, 0};
  doc.add_entity(m);
  Aabb expect = doc.scene().scene_bounds();
  std::string path = dir / (std::string("out.") + GetParam());
  doc.export_file(path, false);
  ImportOptions opt;
  opt.up = UpAxis::Y;
  ImportResult r = import_mesh_file(path, opt);
  size_t tris = 0;
  Aabb got;
  for (auto& p : r.parts) {
    tris += p.mesh->triangles.size();
    got.add(mesh_bounds(*p.mesh));
  }
  EXPECT_EQ(tris, 12u + 4u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(got.min[k], expect.min[k], 1e-3);
    EXPECT_NEAR(got.max[k], expect.max[k], 1e-3);
  }
  // Selection-only export contains the selection only.
  doc.selection().set({a});
  doc.export_file(path, true);
  r = import_mesh_file(path, opt);
  tris = 0;
  for (auto& p : r.parts) tris += p.mesh->triangles.size();
  EXPECT_EQ(tris, 12u);
}

INSTANTIATE_TEST_SUITE_P(Formats, ExportRoundTrip, ::testing::Values("glb", "gltf", "obj", "ply", "stl", "fbx"));

TEST(MeshIo, ImportThroughDocumentIsOneUndoStep) {
  cftest::TempDir dir;
  Log log(false);
  Document doc(log);
  std::vector<ExportItem> items{{cftest::tetra(), glm::mat4(1.f), "a", {1, 0, 0}},
                                {cftest::tetra(2), glm::mat4(1.f), "b", {0, 1, 0}}};
  export_meshes(items, dir / "two.glb");
  auto ids = doc.import_file(dir / "two.glb");
  ASSERT_EQ(ids.size(), 1u);  // a group holding both parts
  EXPECT_TRUE(doc.scene().find(ids[0])->is_group);
  EXPECT_EQ(doc.scene().size(), 3u);
  EXPECT_EQ(doc.history().undo_names().back(), "Import two.glb");
  doc.undo();
  EXPECT_TRUE(doc.scene().empty());
}

TEST(MeshIo, UpAxisAndSizeNormalisation) {
  cftest::TempDir dir;
  auto m = std::make_shared<cubeforge::Mesh>(*cftest::tetra());
  for (auto& p : m->positions) p[2] *= 10.f;  // tall along Z
  export_meshes({{m, glm::mat4(1.f), "z", {1, 1, 1}}}, dir / "zup.stl");
  ImportOptions opt;  // auto: STL is Z-up
  opt.normalize_size = true;
  opt.target_size = 2.f;
  opt.base_center = true;
  ImportResult r = import_mesh_file(dir / "zup.stl", opt);
  Aabb b = mesh_bounds(*r.parts.at(0).mesh);
  EXPECT_NEAR(b.extent().y, 2.f, 1e-4);  // Z became Y and was scaled to 2
  EXPECT_NEAR(b.min.y, 0.f, 1e-4);
  EXPECT_NEAR(b.center().x, 0.f, 1e-4);
}

TEST(MeshIo, BadFilesGiveClearErrors) {
  cftest::TempDir dir;
  std::ofstream(dir / "broken.glb") << "glTF garbage that is not a real file";
  std::ofstream(dir / "empty.obj") << "# nothing\n";
  std::ofstream(dir / "x.unknownext") << "??";
  for (const char* f : {"broken.glb", "empty.obj", "x.unknownext", "missing.obj"}) {
    try {
      import_mesh_file(dir / f);
      ADD_FAILURE() << f << " imported";
    } catch (const cubeforge::Error& e) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(export_format_for("a.xyz"), cubeforge::Error);
  Log log(false);
  Document doc(log);
  EXPECT_THROW(doc.export_file(dir / "x.glb", false), cubeforge::Error);  // empty scene
}

TEST(Picking, RayHitsPartAndGround) {
  Log log(false);
  Document doc(log);
  EntityId a = doc.insert_part(PartKind::Block);  // 4x1x2 resting on the ground, centre (0,0.5,0)
  Ray down{{0.5f, 10.f, 0.2f}, {0, -1, 0}};
  RayHit h = raycast_scene(doc.scene(), down, true);
  ASSERT_TRUE(h.hit);
  EXPECT_EQ(h.entity, a);
  EXPECT_NEAR(h.point[1], 1.f, 1e-4);
  EXPECT_NEAR(h.normal[1], 1.f, 1e-4);
  Ray miss{{10.f, 10.f, 0.f}, {0, -1, 0}};
  h = raycast_scene(doc.scene(), miss, true);
  EXPECT_TRUE(h.hit && h.on_ground);
  EXPECT_NEAR(h.point[0], 10.f, 1e-4);
  h = raycast_scene(doc.scene(), miss, false);
  EXPECT_FALSE(h.hit);
  h = raycast_scene(doc.scene(), down, true, {a});  // skipped
  EXPECT_TRUE(h.on_ground);
  doc.modify(a, "hide", [](Entity& e) { e.visible = false; });
  EXPECT_TRUE(raycast_scene(doc.scene(), down, true).on_ground);
}

TEST(Picking, BvhMatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  cubeforge::Mesh m;
  for (int i = 0; i < 3000; ++i) {
    glm::vec3 c(u(rng) * 5, u(rng) * 5, u(rng) * 5);
    auto base = static_cast<uint32_t>(m.positions.size());
    for (int k = 0; k < 3; ++k) m.positions.push_back(to_vec3(c + glm::vec3(u(rng), u(rng), u(rng)) * 0.3f));
    m.triangles.push_back({base, base + 1, base + 2});
  }
  MeshBvh bvh(m);
  for (int r = 0; r < 300; ++r) {
    glm::vec3 o(u(rng) * 8, u(rng) * 8, 12.f), d = glm::normalize(glm::vec3(u(rng) * 0.3f, u(rng) * 0.3f, -1.f));
    MeshHit h = bvh.intersect(m, o, d, 1e30f);
    float best = 1e30f;
    for (auto& t : m.triangles) {
      glm::vec3 a = to_glm(m.positions[t[0]]), b = to_glm(m.positions[t[1]]), c = to_glm(m.positions[t[2]]);
      glm::vec3 e1 = b - a, e2 = c - a, p = glm::cross(d, e2);
      float det = glm::dot(e1, p);
      if (std::fabs(det) < 1e-12f) continue;
      glm::vec3 s = o - a;
      float uu = glm::dot(s, p) / det;
      glm::vec3 q = glm::cross(s, e1);
      float vv = glm::dot(d, q) / det, tt = glm::dot(e2, q) / det;
      if (uu >= 0 && vv >= 0 && uu + vv <= 1 && tt > 1e-6f) best = std::min(best, tt);
    }
    if (best < 1e30f) {
      ASSERT_TRUE(h.hit) << r;
      EXPECT_NEAR(h.t, best, 1e-4);
    } else {
      EXPECT_FALSE(h.hit);
    }
  }
}

TEST(Recovery, WriteOfferLoadDiscard) {
  cftest::TempDir dir;
  ::setenv("CUBEFORGE_CONFIG_DIR", dir.path.c_str(), 1);
  Log log(false);
  Document doc(log);
  build_sample(doc);
  EXPECT_FALSE(Document::has_recovery());
  doc.write_recovery();
  EXPECT_TRUE(Document::has_recovery());
  Document back(log);
  back.load_recovery();
  EXPECT_EQ(back.scene().size(), doc.scene().size());
  EXPECT_TRUE(back.dirty());
  Document::discard_recovery();
  EXPECT_FALSE(Document::has_recovery());
  ::unsetenv("CUBEFORGE_CONFIG_DIR");
}

// The autosave runs on its own thread from a copy of the scene: parked inside its write (the fault hook holds it at
// the first file's "write" stage, as a stalled fsync would), start() has returned, the document can change, a second
// start() is refused; once released the recovery files hold the copy, not the later change.
TEST(Recovery, AutosaveWritesACopyOnItsOwnThread) {
  cftest::TempDir dir;
  ::setenv("CUBEFORGE_CONFIG_DIR", dir.path.c_str(), 1);
  Log log(false);
  Document doc(log);
  build_sample(doc);
  const size_t n = doc.scene().size();
  cftest::WriteGate gate;  // bounded park: a start() that waited fails below instead of hanging
  Autosaver saver([&](const std::string& stage, const std::string&) {
    if (stage == "write") gate.park();
    return true;
  });
  ASSERT_TRUE(saver.start(doc.scene(), "/somewhere/scene.cfscene", 7));
  ASSERT_TRUE(gate.wait_parked()) << "the write never started";
  EXPECT_TRUE(saver.busy());
  EXPECT_FALSE(saver.take_finished());
  doc.insert_part(PartKind::Block, Vec3{9, 0, 0});  // a change while the copy is being written
  EXPECT_FALSE(saver.start(doc.scene(), "", 8)) << "one write at a time";
  gate.release();
  saver.wait();
  auto fin = saver.take_finished();
  ASSERT_TRUE(fin);
  EXPECT_EQ(fin->counter, 7u);
  EXPECT_EQ(fin->error, "");
  EXPECT_FALSE(saver.take_finished()) << "taken once";
  Document back(log);
  back.load_recovery();
  EXPECT_EQ(back.scene().size(), n) << "the copy, without the later change";
  EXPECT_EQ(back.path(), "/somewhere/scene.cfscene");
  // a failing write is reported with its reason, and the next start() runs
  Autosaver failing([](const std::string& stage, const std::string&) { return stage != "rename"; });
  ASSERT_TRUE(failing.start(doc.scene(), "", 9));
  failing.wait();
  fin = failing.take_finished();
  ASSERT_TRUE(fin);
  EXPECT_NE(fin->error.find("rename failed"), std::string::npos) << fin->error;
  EXPECT_TRUE(failing.start(doc.scene(), "", 10));
  failing.wait();  // before the recovery folder and the config dir go away
  Document::discard_recovery();
  ::unsetenv("CUBEFORGE_CONFIG_DIR");
}

TEST(Settings, ChangesReachTheFileThroughTheBackgroundWriter) {
  cftest::TempDir dir;
  SettingsStore s(dir / "s.json");
  for (int i = 0; i < 50; ++i) s.set("n", i);
  EXPECT_EQ(s.get("n", -1), 49) << "the value changes in memory at once";
  EXPECT_TRUE(s.flush());
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "s.json"))["n"], 49);
  EXPECT_TRUE(s.save());
  SettingsStore unwritable((dir.path / "s.json" / "t.json").string());  // below a file
  unwritable.set("a", 1);
  EXPECT_FALSE(unwritable.flush());
  EXPECT_FALSE(unwritable.save_error().empty());
  EXPECT_FALSE(unwritable.save());
  EXPECT_EQ(unwritable.get("a", 0), 1) << "the value stays in memory";
}

TEST(Settings, PersistAndSurviveCorruption) {
  cftest::TempDir dir;
  {
    SettingsStore s(dir / "s.json");
    s.set("snap", 0.5);
    s.set<std::string>("name", "x");
  }
  SettingsStore s(dir / "s.json");
  EXPECT_DOUBLE_EQ(s.get("snap", 1.0), 0.5);
  EXPECT_EQ(s.get<std::string>("name", ""), "x");
  EXPECT_EQ(s.get("missing", 7), 7);
  std::ofstream(dir / "bad.json") << "{{{";
  SettingsStore bad(dir / "bad.json");
  EXPECT_FALSE(bad.load_error().empty());
  EXPECT_EQ(bad.get("snap", 2), 2);
}
