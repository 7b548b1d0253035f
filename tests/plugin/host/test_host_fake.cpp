// The AI plugin inside a headless editor, on the scripted backend: generate + place as one named undo step, undo,
// redo; every bad input gives a message and leaves the panel idle; failures and cancel return the panel to idle
// with the error shown; click-to-place through the viewport input hook; the ghost preview overlay; history actions
// and persistence across restarts; settings saved on change; batch runs writing the latency report; variations (one
// history entry per variation with its own seed, the first placed as one undo step, the top-p check).
#include "fake_setup.h"

#include <algorithm>
#include <fstream>

using namespace cubeforge;
using namespace cubeforge::ai;
using namespace cubeforge::ai::testing;

namespace {

ControllerOptions fake_options(std::shared_ptr<FakeBackend> be) {
  ControllerOptions o;
  o.backend = be;
  o.default_model_dir = "fake:default";
  return o;
}

class CollectOverlay : public editor::OverlayDraw {
 public:
  struct Ghost {
    std::shared_ptr<const Mesh> mesh;
    editor::Transform t;
    editor::Vec4 rgba;
  };
  std::vector<Ghost> ghosts;
  int lines = 0, boxes = 0;
  void ghost_mesh(std::shared_ptr<const Mesh> m, const editor::Transform& t, editor::Vec4 c) override {
    ghosts.push_back({std::move(m), t, c});
  }
  void line(Vec3, Vec3, editor::Vec4) override { ++lines; }
  void box(Vec3, Vec3, const editor::Transform&, editor::Vec4) override { ++boxes; }
  std::array<float, 16> view_projection() const override { return vp; }
  std::array<float, 2> viewport_size() const override { return {800.f, 600.f}; }
  std::array<float, 16> vp{};
};

}  // namespace

TEST(AiHost, GeneratePlacesOneNamedUndoStepThenUndoRedo) {
  FakeSetup s("place");
  Editor& ed = *s.ed;
  EXPECT_EQ(ed.status()["model"]["state"], "ready");
  EXPECT_TRUE(ed.cmd("ai.pick", {{"point", {2.0, 0.5, -3.0}}})["ok"].get<bool>());
  json r = ed.cmd("ai.generate", {{"prompt", "a red chair"}, {"seed", 5}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_TRUE(ed.status()["busy"].get<bool>());
  ASSERT_TRUE(ed.wait_idle());
  json st = ed.status();
  EXPECT_EQ(st["last"]["state"], "done") << st.dump(1);
  EXPECT_GT(st["last"]["previews"].get<int>(), 0);
  ASSERT_EQ(ed.doc.scene().size(), 1u);
  const auto& e = ed.doc.scene().entities()[0];
  EXPECT_EQ(e.name, "a red chair");
  EXPECT_EQ(e.transform.position, (Vec3{2.f, 0.5f, -3.f}));
  ASSERT_TRUE(e.mesh);
  EXPECT_NEAR(mesh_bounds(*e.mesh).min[1], 0.f, 1e-5f);  // base on the spot
  EXPECT_EQ(ed.doc.history().undo_names().back(), "Generate: a red chair");
  EXPECT_EQ(ed.doc.selection().ids(), std::vector<editor::EntityId>{e.id});
  ASSERT_TRUE(ed.doc.undo());
  EXPECT_EQ(ed.doc.scene().size(), 0u);
  ASSERT_TRUE(ed.doc.redo());
  EXPECT_EQ(ed.doc.scene().size(), 1u);
  EXPECT_EQ(ed.doc.scene().entities()[0].mesh, e.mesh);
  // The latency log has the job.
  EXPECT_EQ(st["latency_records"], 1);
  EXPECT_GT(st["last"]["latency"]["ttft_ms"].get<double>(), 0.0);
  EXPECT_GT(st["last"]["latency"]["ui_frame_ms"]["n"].get<int>(), 0);
}

TEST(AiHost, BadInputGivesAMessageAndStaysIdle) {
  FakeSetup s("badinput", [](FakeScript& f) { f.use_bbox = true; });
  Editor& ed = *s.ed;
  json r = ed.cmd("ai.generate", {{"prompt", "   \n"}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("prompt is empty"), std::string::npos) << r.dump();
  EXPECT_FALSE(ed.status()["busy"].get<bool>());

  r = ed.cmd("ai.generate", {{"prompt", "a box"}, {"use_bbox", true}, {"bbox", {0.0, 1.0, 1.0}}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("bounding box out of range"), std::string::npos) << r.dump();
  r = ed.cmd("ai.generate", {{"prompt", "a box"}, {"use_bbox", true}, {"bbox", {200.0, 1.0, 1.0}}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_FALSE(ed.status()["busy"].get<bool>());
  // A valid box is used and the result fits it.
  r = ed.cmd("ai.generate", {{"prompt", "a box"}, {"use_bbox", true}, {"bbox", {1.0, 4.0, 1.0}}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed.wait_idle());
  ASSERT_EQ(ed.doc.scene().size(), 1u);
  const Vec3 size = mesh_bounds(*ed.doc.scene().entities()[0].mesh).size();
  EXPECT_LE(size[0], 1.f + 1e-4f);
  EXPECT_LE(size[1], 4.f + 1e-4f);
  EXPECT_NEAR(std::max({size[0] / 1.f, size[1] / 4.f, size[2] / 1.f}), 1.f, 1e-4f);

  // Bad model directory: clear message, nothing queued.
  ed.cmd("ai.load_model", {{"dir", (s.cfg.dir / "nope").string()}});
  r = ed.cmd("ai.generate", {{"prompt", "a box"}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("does not exist"), std::string::npos) << r.dump();
  fs::create_directories(s.cfg.dir / "half");
  std::ofstream(s.cfg.dir / "half" / "config.yaml") << "x";
  ed.cmd("ai.load_model", {{"dir", (s.cfg.dir / "half").string()}});
  ASSERT_TRUE(ed.wait_model());
  r = ed.cmd("ai.generate", {{"prompt", "a box"}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("shape_gpt.safetensors"), std::string::npos) << r.dump();
  EXPECT_EQ(ed.status()["model"]["state"], "failed");
  EXPECT_FALSE(ed.status()["busy"].get<bool>());
}

class AiHostFailure : public ::testing::TestWithParam<const char*> {};

TEST_P(AiHostFailure, ReturnsToIdleWithTheErrorShown) {
  std::string point = GetParam();
  std::replace(point.begin(), point.end(), '_', ':');
  FakeSetup s(std::string("fail_") + GetParam(), [&](FakeScript& f) { f.fail_at = point; });
  Editor& ed = *s.ed;
  if (std::string(GetParam()) == "load") {
    // The preload failed: the panel says so and refuses to start.
    EXPECT_EQ(ed.status()["model"]["state"], "failed");
    json r = ed.cmd("ai.generate", {{"prompt", "a lamp"}});
    EXPECT_FALSE(r["ok"].get<bool>());
    EXPECT_NE(r["error"].get<std::string>().find("corrupt"), std::string::npos) << r.dump();
    s.be->script.fail_at.clear();
    ed.cmd("ai.load_model", {{"default", true}});
    ASSERT_TRUE(ed.wait_model());
  } else {
    json r = ed.cmd("ai.generate", {{"prompt", "a lamp"}});
    ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
    ASSERT_TRUE(ed.wait_idle());
    json st = ed.status();
    EXPECT_FALSE(st["busy"].get<bool>());
    EXPECT_EQ(st["job"], nullptr);
    EXPECT_EQ(st["last"]["state"], "failed");
    EXPECT_NE(ed.errors().find("injected"), std::string::npos) << ed.all_messages() << st.dump(1);
    EXPECT_EQ(ed.doc.scene().size(), 0u);
    EXPECT_EQ(ed.doc.history().undo_names().size(), 0u);
    s.be->script.fail_at.clear();
  }
  // The panel works again.
  json r = ed.cmd("ai.generate", {{"prompt", "a lamp"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed.wait_idle());
  EXPECT_EQ(ed.status()["last"]["state"], "done");
  EXPECT_EQ(ed.doc.scene().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Stages, AiHostFailure,
                         ::testing::Values("load", "text", "token_5", "preview", "latents", "occupancy", "meshing", "cleanup"),
                         [](const auto& i) { return std::string(i.param); });

TEST(AiHost, CancelReturnsToIdleAndPlacesNothing) {
  FakeSetup s("cancel", [](FakeScript& f) { f.gate_at = "token:20"; });
  Editor& ed = *s.ed;
  ASSERT_TRUE(ed.cmd("ai.generate", {{"prompt", "a lamp"}})["ok"].get<bool>());
  ASSERT_TRUE(ed.pump_until([&] { return s.be->at_gate.load(); }));
  ed.cmd("ai.cancel");
  ASSERT_TRUE(ed.wait_idle(5));
  EXPECT_EQ(ed.status()["last"]["state"], "cancelled");
  EXPECT_EQ(ed.doc.scene().size(), 0u);
  EXPECT_EQ(ed.status()["latency_records"], 1);
}

TEST(AiHost, GhostPreviewSitsOnTheSpotWhileGenerating) {
  FakeSetup s("ghost", [](FakeScript& f) { f.gate_at = "token:40"; });
  Editor& ed = *s.ed;
  ed.cmd("ai.pick", {{"point", {1.0, 2.0, 3.0}}});
  ASSERT_TRUE(ed.cmd("ai.generate", {{"prompt", "a lamp"}, {"preview_every", 8}})["ok"].get<bool>());
  ASSERT_TRUE(ed.pump_until([&] { return s.be->at_gate.load() && ed.status()["job"]["previews"].get<int>() > 0; }));
  CollectOverlay ov;
  ed.host.draw_overlays(ov);
  ASSERT_EQ(ov.ghosts.size(), 1u);
  EXPECT_LT(ov.ghosts[0].rgba[3], 1.f);  // translucent
  const Bounds b = mesh_bounds(*ov.ghosts[0].mesh);
  const auto& t = ov.ghosts[0].t;
  EXPECT_NEAR(t.position[1] + t.scale[1] * b.min[1], 2.f, 1e-4f);  // base on the spot
  EXPECT_NEAR(t.position[0] + t.scale[0] * 0.5f * (b.min[0] + b.max[0]), 1.f, 1e-4f);
  EXPECT_GT(ov.lines, 0);  // spot marker
  // Moving the spot while generating moves the ghost and the landing place.
  ed.cmd("ai.pick", {{"point", {-4.0, 0.0, 0.0}}});
  CollectOverlay ov2;
  ed.host.draw_overlays(ov2);
  ASSERT_EQ(ov2.ghosts.size(), 1u);
  EXPECT_NEAR(ov2.ghosts[0].t.position[0] + ov2.ghosts[0].t.scale[0] * 0.5f * (b.min[0] + b.max[0]), -4.f, 1e-4f);
  s.be->release();
  ASSERT_TRUE(ed.wait_idle());
  ASSERT_EQ(ed.doc.scene().size(), 1u);
  EXPECT_EQ(ed.doc.scene().entities()[0].transform.position, (Vec3{-4.f, 0.f, 0.f}));
  CollectOverlay ov3;
  ed.host.draw_overlays(ov3);
  EXPECT_TRUE(ov3.ghosts.empty());
}

TEST(AiHost, ClickInTheViewportChoosesTheSpot) {
  FakeSetup s("click");
  Editor& ed = *s.ed;
  // Camera straight down from y = 10: pixel (x, y) looks at ground point (x / 100, 0, y / 100).
  ed.host.set_viewport_ray([](float x, float y) -> std::optional<editor::Ray> {
    return editor::Ray{{x / 100.f, 10.f, y / 100.f}, {0.f, -1.f, 0.f}};
  });
  editor::ViewportEvent press;
  press.type = editor::ViewportEvent::Type::Press;
  press.x = 250;
  press.y = 150;
  EXPECT_FALSE(ed.host.dispatch_input(press));  // not armed: the editor gets the click
  ed.cmd("ai.arm_pick");
  EXPECT_TRUE(ed.status()["picking"].get<bool>());
  editor::ViewportEvent move = press;
  move.type = editor::ViewportEvent::Type::Move;
  EXPECT_FALSE(ed.host.dispatch_input(move));  // hover only
  EXPECT_TRUE(ed.host.dispatch_input(press));
  editor::ViewportEvent release = press;
  release.type = editor::ViewportEvent::Type::Release;
  EXPECT_TRUE(ed.host.dispatch_input(release));  // the matching release is swallowed too
  json st = ed.status();
  EXPECT_FALSE(st["picking"].get<bool>());
  EXPECT_NEAR(st["spot"][0].get<double>(), 2.5, 1e-5);
  EXPECT_NEAR(st["spot"][2].get<double>(), 1.5, 1e-5);
  ASSERT_TRUE(ed.cmd("ai.generate", {{"prompt", "a crate"}})["ok"].get<bool>());
  ASSERT_TRUE(ed.wait_idle());
  ASSERT_EQ(ed.doc.scene().size(), 1u);
  const auto crate = ed.doc.scene().entities()[0].id;
  EXPECT_EQ(ed.doc.scene().entities()[0].transform.position, (Vec3{2.5f, 0.f, 1.5f}));
  // Clicking on top of the crate stacks the next result on it (ray hit on an object).
  ed.host.set_viewport_ray([](float, float) -> std::optional<editor::Ray> {
    return editor::Ray{{2.5f, 10.f, 1.5f}, {0.f, -1.f, 0.f}};
  });
  ed.cmd("ai.arm_pick");
  EXPECT_TRUE(ed.host.dispatch_input(press));
  st = ed.status();
  EXPECT_GT(st["spot"][1].get<double>(), 0.1);
  // Placing from the history by clicking.
  const std::string id = ed.cmd("ai.history")[0]["id"].get<std::string>();
  ed.cmd("ai.arm_pick", {{"history_id", id}});
  EXPECT_TRUE(ed.host.dispatch_input(press));
  ASSERT_EQ(ed.doc.scene().size(), 2u);
  EXPECT_EQ(ed.doc.history().undo_names().back(), "Place: a crate");
  EXPECT_NE(ed.doc.scene().entities()[1].id, crate);
}

TEST(AiHost, HistoryActionsAndPersistence) {
  FakeSetup s("history");
  Editor* ed = s.ed.get();
  ASSERT_TRUE(ed->cmd("ai.generate", {{"prompt", "a red chair"}, {"seed", 77}, {"auto_place", false}})["ok"].get<bool>());
  ASSERT_TRUE(ed->wait_idle());
  EXPECT_EQ(ed->doc.scene().size(), 0u);  // auto place off
  json h = ed->cmd("ai.history");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0]["prompt"], "a red chair");
  EXPECT_EQ(h[0]["seed"], 77);
  const std::string id = h[0]["id"];
  EXPECT_TRUE(fs::exists(s.cfg.dir / "plugins" / "ai" / "history" / (id + ".glb")));
  EXPECT_TRUE(fs::exists(s.cfg.dir / "plugins" / "ai" / "history" / (id + ".png")));

  // Place again.
  json r = ed->cmd("ai.history_action", {{"id", id}, {"action", "place"}, {"point", {1.0, 0.0, 1.0}}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_EQ(ed->doc.scene().size(), 1u);
  EXPECT_EQ(ed->doc.history().undo_names().back(), "Place: a red chair");
  // Same seed: identical result; variation: new seed.
  r = ed->cmd("ai.history_action", {{"index", -1}, {"action", "regenerate"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed->wait_idle());
  r = ed->cmd("ai.history_action", {{"index", 0}, {"action", "variation"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed->wait_idle());
  h = ed->cmd("ai.history");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[1]["seed"], 77);
  EXPECT_NE(h[2]["seed"], 77);
  auto& store = ed->plugin->controller()->history();
  const auto m0 = store.mesh(h[0]["id"]), m1 = store.mesh(h[1]["id"]);
  EXPECT_EQ(m0->positions, m1->positions);
  EXPECT_EQ(m0->triangles, m1->triangles);
  // Export, delete.
  const std::string out = (s.cfg.dir / "exports" / "chair.obj").string();
  r = ed->cmd("ai.history_action", {{"id", id}, {"action", "export"}, {"path", out}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_TRUE(fs::exists(out));
  r = ed->cmd("ai.history_action", {{"index", 2}, {"action", "delete"}});
  ASSERT_TRUE(r["ok"].get<bool>());
  EXPECT_EQ(ed->cmd("ai.history").size(), 2u);
  r = ed->cmd("ai.history_action", {{"id", id}, {"action", "export"}, {"path", "/proc/nope/x.glb"}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("Export failed"), std::string::npos);

  // Restart: the history is still there and places from its .glb.
  s.restart();
  ed = s.ed.get();
  h = ed->cmd("ai.history");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0]["id"], id);
  r = ed->cmd("ai.history_action", {{"id", id}, {"action", "place"}, {"point", {0.0, 0.0, 0.0}}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_EQ(ed->doc.scene().size(), 1u);
  EXPECT_EQ(ed->doc.scene().entities()[0].mesh->face_count(), h[0]["faces"].get<size_t>());
  // The latency log survived too.
  EXPECT_EQ(ed->status()["latency_records"], 3);
}

TEST(AiHost, SettingsAreSavedOnChange) {
  FakeSetup s("settings");
  s.ed->cmd("ai.set", {{"seed", 4242}, {"prompt", "a barrel"}, {"guidance", 5.5}, {"top_p", true}, {"variations", 3}});
  // Saved shortly after the change (debounced), without an explicit save.
  s.ed->pump_until([] { return false; }, 0.6);
  s.restart();
  json f = s.ed->status()["form"];
  EXPECT_EQ(f["seed"], 4242);
  EXPECT_EQ(f["prompt"], "a barrel");
  EXPECT_FLOAT_EQ(f["guidance"].get<float>(), 5.5f);
  EXPECT_TRUE(f["top_p"].get<bool>());
  EXPECT_EQ(f["variations"], 3);
}

TEST(AiHost, BatchRunWritesTheLatencyReport) {
  FakeSetup s("batch");
  Editor& ed = *s.ed;
  const std::string csv = (s.cfg.dir / "rep" / "run.csv").string(), js = (s.cfg.dir / "rep" / "run.json").string();
  json r = ed.cmd("ai.run_prompts", {{"prompts", {"a chair", "a table", "a lamp"}}, {"csv", csv}, {"json", js}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["jobs"].size(), 3u);
  ASSERT_TRUE(ed.pump_until([&] { return ed.cmd("ai.check", {{"path", "/batch/complete"}, {"equals", true}}).get<bool>(); }));
  EXPECT_EQ(ed.doc.scene().size(), 0u);  // batch results are not placed unless asked
  std::ifstream in(csv);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 4);
  std::ifstream jin(js);
  json rep = json::parse(jin);
  EXPECT_EQ(rep["summary"]["done"], 3);
  EXPECT_EQ(rep["jobs"][1]["prompt"], "a table");
  EXPECT_GT(rep["summary"]["ttft_ms"]["p50"].get<double>(), 0.0);
  // Whole-log export through the command.
  r = ed.cmd("ai.latency_export", {{"csv", (s.cfg.dir / "all.csv").string()}});
  EXPECT_TRUE(r["ok"].get<bool>());
  EXPECT_TRUE(fs::exists(s.cfg.dir / "all.csv"));
}

TEST(AiHost, CheckAndGetCommandsForScripts) {
  FakeSetup s("check");
  Editor& ed = *s.ed;
  EXPECT_TRUE(ed.cmd("ai.check", {{"path", "/model/state"}, {"equals", "ready"}}).get<bool>());
  EXPECT_FALSE(ed.cmd("ai.check", {{"path", "/busy"}, {"equals", true}}).get<bool>());
  json all = json::object();
  all["all"] = json::array({json{{"path", "/history"}, {"op", "<"}, {"value", 1}}, json{{"path", "/busy"}, {"equals", false}}});
  EXPECT_TRUE(ed.cmd("ai.check", all).get<bool>());
  EXPECT_TRUE(ed.cmd("ai.check", {{"path", "/history"}, {"op", "<"}, {"value", 1}}).get<bool>());
  EXPECT_EQ(ed.cmd("ai.get", {{"path", "/model/tokens"}}), 64);
  EXPECT_THROW(ed.cmd("ai.check", {{"path", "/history"}, {"op", "~"}, {"value", 1}}), Error);
  EXPECT_THROW(ed.host.run_command("ai.generate", "not json"), Error);
}

TEST(AiHost, BoxGizmoResizesTheRequestedSize) {
  FakeSetup s("gizmo", [](FakeScript& f) { f.use_bbox = true; });
  Editor& ed = *s.ed;
  ed.cmd("ai.set", {{"use_bbox", true}, {"bbox", {1.0, 2.0, 1.0}}, {"aspect_lock", false}});
  ed.cmd("ai.pick", {{"point", {0.0, 0.0, 0.0}}});
  // Orthographic camera looking down -z: screen x = (x / 10 + 0.5) * 800, y = (0.5 - y / 10) * 600.
  CollectOverlay ov;
  ov.vp[0] = 0.2f;
  ov.vp[5] = 0.2f;
  ov.vp[15] = 1.f;
  ed.host.draw_overlays(ov);
  EXPECT_GE(ov.boxes, 4);  // the size box + three handles
  auto ev = [](editor::ViewportEvent::Type t, float x, float y) {
    editor::ViewportEvent e;
    e.type = t;
    e.x = x;
    e.y = y;
    return e;
  };
  using T = editor::ViewportEvent::Type;
  // The +x handle sits at (0.5, 1, 0) -> pixel (440, 240); drag it 40 px right = 0.5 world units = +1 width.
  EXPECT_TRUE(ed.host.dispatch_input(ev(T::Press, 441, 241)));
  EXPECT_TRUE(ed.host.dispatch_input(ev(T::Move, 481, 241)));
  EXPECT_TRUE(ed.host.dispatch_input(ev(T::Release, 481, 241)));
  json b = ed.status()["form"]["bbox"];
  EXPECT_NEAR(b[0].get<double>(), 2.0, 1e-4);
  EXPECT_NEAR(b[1].get<double>(), 2.0, 1e-4);
  // The top handle at (0, 2, 0) -> pixel (400, 180), with aspect lock: everything scales.
  ed.cmd("ai.set", {{"aspect_lock", true}});
  ed.host.draw_overlays(ov);
  EXPECT_TRUE(ed.host.dispatch_input(ev(T::Press, 400, 180)));
  EXPECT_TRUE(ed.host.dispatch_input(ev(T::Move, 400, 120)));  // up 60 px = +1 height
  EXPECT_TRUE(ed.host.dispatch_input(ev(T::Release, 400, 120)));
  b = ed.status()["form"]["bbox"];
  EXPECT_NEAR(b[1].get<double>(), 3.0, 1e-4);
  EXPECT_NEAR(b[0].get<double>(), 3.0, 1e-4);
  EXPECT_NEAR(b[2].get<double>(), 1.5, 1e-4);
  // Away from the handles the editor keeps its clicks.
  EXPECT_FALSE(ed.host.dispatch_input(ev(T::Press, 100, 100)));
}

TEST(AiHost, VariationsGoToTheHistoryAndTheFirstIsPlaced) {
  FakeSetup s("variations");
  Editor& ed = *s.ed;
  ed.cmd("ai.pick", {{"point", {1.0, 0.0, 2.0}}});
  json r = ed.cmd("ai.generate", {{"prompt", "a street lamp"}, {"seed", 40}, {"top_p", true}, {"variations", 3}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(ed.status()["job"]["variations"], 3);
  EXPECT_EQ(ed.status()["job"]["tokens_total"], 3 * 64);
  ASSERT_TRUE(ed.wait_idle());
  json st = ed.status();
  EXPECT_EQ(st["last"]["state"], "done");
  EXPECT_EQ(st["last"]["variations"], 3);
  // One history entry per variation, each with its own seed and the settings of one variation.
  json h = ed.cmd("ai.history");
  ASSERT_EQ(h.size(), 3u);
  for (int v = 0; v < 3; ++v) {
    EXPECT_EQ(h[v]["seed"], 40 + v);
    EXPECT_EQ(h[v]["variation"], v);
    EXPECT_EQ(h[v]["variations"], 3);
    EXPECT_EQ(h[v]["spec"]["seed"], 40 + v);
    EXPECT_EQ(h[v]["spec"]["variations"], 1);
  }
  EXPECT_EQ(st["last"]["history_ids"].size(), 3u);
  EXPECT_EQ(st["last"]["history_id"], h[0]["id"]);
  // Variation 0 is placed as one undo step; the message points at the others.
  ASSERT_EQ(ed.doc.scene().size(), 1u);
  EXPECT_EQ(ed.doc.history().undo_names(), std::vector<std::string>{"Generate: a street lamp"});
  EXPECT_EQ(ed.doc.scene().entities()[0].transform.position, (Vec3{1.f, 0.f, 2.f}));
  auto& store = ed.plugin->controller()->history();
  EXPECT_EQ(ed.doc.scene().entities()[0].mesh->positions, store.mesh(h[0]["id"])->positions);
  EXPECT_NE(store.mesh(h[1]["id"])->positions, store.mesh(h[0]["id"])->positions);
  EXPECT_NE(ed.all_messages().find("the other 2 are in the history"), std::string::npos) << ed.all_messages();
  ASSERT_TRUE(ed.doc.undo());
  EXPECT_EQ(ed.doc.scene().size(), 0u);
  // One latency record for the job.
  EXPECT_EQ(st["latency_records"], 1);
  EXPECT_EQ(st["last"]["latency"]["variations"], 3);
  EXPECT_EQ(st["last"]["latency"]["tokens"], 3 * 64);

  // "Same seed" on variation 2 remakes exactly that shape, alone; "Variation" makes a new one.
  r = ed.cmd("ai.history_action", {{"index", 2}, {"action", "regenerate"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed.wait_idle());
  r = ed.cmd("ai.history_action", {{"index", 2}, {"action", "variation"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed.wait_idle());
  h = ed.cmd("ai.history");
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h[3]["seed"], 42);
  EXPECT_EQ(h[3]["variations"], 1);
  EXPECT_EQ(store.mesh(h[3]["id"])->positions, store.mesh(h[2]["id"])->positions);
  EXPECT_NE(h[4]["seed"], 42);
  EXPECT_EQ(h[4]["variations"], 1);
}

TEST(AiHost, VariationsWithoutPlacingKeepThemAllInTheHistory) {
  FakeSetup s("variations_noplace");
  Editor& ed = *s.ed;
  json r = ed.cmd("ai.generate", {{"prompt", "a crate"}, {"top_p", true}, {"variations", 2}, {"place", false}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed.wait_idle());
  EXPECT_EQ(ed.doc.scene().size(), 0u);
  EXPECT_EQ(ed.cmd("ai.history").size(), 2u);
  EXPECT_NE(ed.all_messages().find("all 2 are in the history"), std::string::npos) << ed.all_messages();
}

TEST(AiHost, TwoVariationsPlacedPointAtTheOtherOne) {
  FakeSetup s("variations_two");
  Editor& ed = *s.ed;
  json r = ed.cmd("ai.generate", {{"prompt", "a crate"}, {"top_p", true}, {"variations", 2}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed.wait_idle());
  EXPECT_EQ(ed.doc.scene().size(), 1u);
  EXPECT_NE(ed.all_messages().find("the other one is in the history to place"), std::string::npos)
      << ed.all_messages();
  EXPECT_EQ(ed.all_messages().find("the other 1 "), std::string::npos) << ed.all_messages();
}

TEST(AiHost, VariationsNeedTopPAndARange) {
  FakeSetup s("variations_check");
  Editor& ed = *s.ed;
  json r = ed.cmd("ai.generate", {{"prompt", "a chair"}, {"variations", 3}});  // greedy (the default)
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("top-p"), std::string::npos) << r.dump();
  EXPECT_FALSE(ed.status()["busy"].get<bool>());
  EXPECT_EQ(ed.status()["form"]["variations"], 1);  // the form is left as it was
  EXPECT_EQ(ed.status()["form"]["prompt"], "");
  r = ed.cmd("ai.set", {{"variations", 2}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("top-p"), std::string::npos) << r.dump();
  r = ed.cmd("ai.set", {{"top_p", true}, {"variations", 5}});
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("1 to 4"), std::string::npos) << r.dump();
  EXPECT_FALSE(ed.status()["form"]["top_p"].get<bool>());
  r = ed.cmd("ai.set", {{"top_p", true}, {"variations", 4}});
  EXPECT_EQ(r["variations"], 4);
  EXPECT_EQ(ed.status()["form"]["variations"], 4);
  // Back to greedy: the count is kept for later but one shape is made (the panel's control is off).
  ed.cmd("ai.set", {{"top_p", false}});
  ASSERT_TRUE(ed.cmd("ai.generate", {{"prompt", "a chair"}})["ok"].get<bool>());
  ASSERT_TRUE(ed.wait_idle());
  EXPECT_EQ(ed.cmd("ai.history").size(), 1u);
  EXPECT_EQ(ed.status()["last"]["variations"], 1);
}

TEST(AiHost, CancelDuringVariationsPlacesNothing) {
  FakeSetup s("variations_cancel", [](FakeScript& f) { f.gate_at = "token:4@1"; });
  Editor& ed = *s.ed;
  ASSERT_TRUE(ed.cmd("ai.generate", {{"prompt", "a lamp"}, {"top_p", true}, {"variations", 3}})["ok"].get<bool>());
  ASSERT_TRUE(ed.pump_until([&] { return s.be->at_gate.load() && ed.status()["job"]["tokens_done"] == 68; }))
      << ed.status()["job"].dump();
  EXPECT_EQ(ed.status()["job"]["variation"], 1);
  ed.cmd("ai.cancel");
  ASSERT_TRUE(ed.wait_idle(5));
  json st = ed.status();
  EXPECT_EQ(st["last"]["state"], "cancelled");
  EXPECT_EQ(ed.doc.scene().size(), 0u);
  EXPECT_EQ(ed.cmd("ai.history").size(), 0u);
  EXPECT_EQ(st["latency_records"], 1);
  EXPECT_EQ(st["last"]["latency"]["variations"], 3);
  EXPECT_EQ(st["last"]["latency"]["tokens"], 68);
}
