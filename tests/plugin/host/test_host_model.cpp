// The AI plugin on the real Cube3D CPU path, with random-weight test models written by
// `cubeforge-gen make-test-model` (the real CLIP vocabulary): prompt → live preview → placed mesh → undo/redo,
// same seed = identical result, a variation = the single generation of its seed (Cube3D::generate_variations
// through the worker), unknown words / truncated prompts, cancel latency in token steps, and the UI frame
// time (a 60 Hz headless UI loop drawing the panel and the ghost) while a generation runs on the CPU.
// Skipped (with the reason) when cubeforge-gen or the CLIP vocabulary is not available.
#include "host_fixture.h"

#include "worker/cube3d_backend.h"
#include "worker/worker.h"
#include "../worker_test_util.h"

#include <imgui.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>

using namespace cubeforge;
using namespace cubeforge::ai;
using namespace cubeforge::ai::testing;

namespace {

// Writes (once per process) a test model of the given preset; empty string + reason when impossible.
std::string test_model(const std::string& preset, std::string* why) {
  static std::map<std::string, std::string> made;
  if (auto it = made.find(preset); it != made.end()) return it->second;
  const char* bin = std::getenv("CUBEFORGE_BIN_DIR");
  const char* shared = std::getenv("CUBEFORGE_SHARED_DIR");
  if (!bin || !*bin) bin = CF_AI_TEST_BIN_DIR;
  if (!shared || !*shared) shared = CF_AI_TEST_SHARED_DIR;
  const fs::path gen = fs::path(bin ? bin : "") / "cubeforge-gen";
  const fs::path tok = fs::path(shared ? shared : "") / "data" / "clip-tokenizer";
  if (!bin || !fs::exists(gen)) {
    *why = "cubeforge-gen not found (CUBEFORGE_BIN_DIR)";
    return {};
  }
  if (!shared || !fs::exists(tok / "vocab.json")) {
    *why = "CLIP vocabulary not found under CUBEFORGE_SHARED_DIR/data/clip-tokenizer";
    return {};
  }
  const fs::path out = fs::temp_directory_path() / ("cf_ai_model_" + preset + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  const std::string cmd = "'" + gen.string() + "' make-test-model --out '" + out.string() + "' --preset " + preset +
                          " --tokenizer '" + tok.string() + "' > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0 || !check_model_dir(out.string()).empty()) {
    *why = "cubeforge-gen make-test-model failed: " + cmd;
    return {};
  }
  static struct Cleanup {
    std::vector<fs::path> dirs;
    ~Cleanup() {
      std::error_code ec;
      for (auto& d : dirs) fs::remove_all(d, ec);
    }
  } cleanup;
  cleanup.dirs.push_back(out);
  made[preset] = out.string();
  return out.string();
}

#define NEED_MODEL(var, preset)                   \
  std::string why_##var;                          \
  const std::string var = test_model(preset, &why_##var); \
  if (var.empty()) GTEST_SKIP() << why_##var

ControllerOptions real_options(const std::string& dir) {
  ControllerOptions o;
  o.default_model_dir = dir;
  return o;
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// A job on a test model at the quick resolution (the worker-level tests).
JobSpec real_spec(const std::string& dir, const std::string& prompt) {
  JobSpec s;
  s.model_dir = dir;
  s.request.prompt = prompt;
  s.mesh.resolution_base = 5;
  return s;
}

// Fast settings for random-weight models.
json quick() { return {{"resolution", 5}, {"preview_resolution", 4}, {"preview_every", 4}, {"face_cap", 5000}}; }

}  // namespace

TEST(AiModel, PromptToPreviewToPlacedMeshThenUndoRedo) {
  NEED_MODEL(dir, "tiny");
  ScopedConfigDir cfg("model_e2e");
  Editor ed(real_options(dir));
  ASSERT_TRUE(ed.wait_model(60));
  json st = ed.status();
  ASSERT_EQ(st["model"]["state"], "ready") << st.dump(1);
  EXPECT_NE(st["model"]["backend"].get<std::string>().find("CPU"), std::string::npos);
  ed.cmd("ai.set", quick());
  ed.cmd("ai.pick", {{"point", {3.0, 0.0, -1.0}}});
  json r = ed.cmd("ai.generate", {{"prompt", "a red chair"}, {"seed", 1}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  // A preview arrives while the job is still running.
  bool preview_before_done = false;
  ASSERT_TRUE(ed.pump_until([&] {
    json s = ed.status();
    if (!s["job"].is_null() && s["job"]["previews"].get<int>() > 0) preview_before_done = true;
    return !s["busy"].get<bool>();
  }, 120));
  st = ed.status();
  ASSERT_EQ(st["last"]["state"], "done") << st.dump(1);
  EXPECT_TRUE(preview_before_done);
  EXPECT_GT(st["last"]["first_preview_tokens"].get<int>(), 0);
  EXPECT_LT(st["last"]["first_preview_tokens"].get<int>(), st["model"]["tokens"].get<int>());
  const json lat = st["last"]["latency"];
  EXPECT_GT(lat["ttft_ms"].get<double>(), 0.0);
  EXPECT_GT(lat["first_preview_ms"].get<double>(), 0.0);
  EXPECT_EQ(lat["tokens"], st["model"]["tokens"]);
  std::printf("[tiny] ttft %.1f ms, first preview %.1f ms, tpot p50 %.2f ms, gpt %.1f ms, decode %.1f ms, meshing %.1f ms, "
              "total %.1f ms, %d faces\n",
              lat["ttft_ms"].get<double>(), lat["first_preview_ms"].get<double>(), lat["tpot_ms"]["p50"].get<double>(),
              lat["gpt_ms"].get<double>(), lat["decode_ms"].get<double>(), lat["meshing_ms"].get<double>(),
              lat["total_ms"].get<double>(), lat["faces"].get<int>());
  if (st["last"]["faces"].get<int>() == 0) GTEST_SKIP() << "this random model produced no surface";
  ASSERT_EQ(ed.doc.scene().size(), 1u);
  const auto& e = ed.doc.scene().entities()[0];
  EXPECT_EQ(e.transform.position, (Vec3{3.f, 0.f, -1.f}));
  EXPECT_NEAR(mesh_bounds(*e.mesh).min[1], 0.f, 1e-4f);
  EXPECT_LE(e.mesh->face_count(), 5000u);
  EXPECT_EQ(ed.doc.history().undo_names().back(), "Generate: a red chair");
  ASSERT_TRUE(ed.doc.undo());
  EXPECT_EQ(ed.doc.scene().size(), 0u);
  ASSERT_TRUE(ed.doc.redo());
  EXPECT_EQ(ed.doc.scene().size(), 1u);
}

TEST(AiModel, SameSeedGivesTheIdenticalResult) {
  NEED_MODEL(dir, "tiny");
  ScopedConfigDir cfg("model_seed");
  Editor ed(real_options(dir));
  ASSERT_TRUE(ed.wait_model(60));
  json q = quick();
  q["auto_place"] = false;
  q["top_p"] = true;  // sampling: the seed matters
  ed.cmd("ai.set", q);
  ASSERT_TRUE(ed.cmd("ai.generate", {{"prompt", "a wooden table"}, {"seed", 9}})["ok"].get<bool>());
  ASSERT_TRUE(ed.wait_idle(120));
  if (ed.cmd("ai.history").empty()) GTEST_SKIP() << "this random model produced no surface";
  ASSERT_TRUE(ed.cmd("ai.history_action", {{"index", 0}, {"action", "regenerate"}})["ok"].get<bool>());
  ASSERT_TRUE(ed.wait_idle(120));
  json h = ed.cmd("ai.history");
  ASSERT_EQ(h.size(), 2u);
  auto& store = ed.plugin->controller()->history();
  auto a = store.mesh(h[0]["id"]), b = store.mesh(h[1]["id"]);
  EXPECT_EQ(a->positions, b->positions);
  EXPECT_EQ(a->triangles, b->triangles);
}

// Variations through the real backend (the CPU decodes them one after the other): variation 1 of seed 9 is exactly
// the single generation of seed 10, tokens and mesh; the worker counts the tokens of both variations.
TEST(AiModel, AVariationIsTheSingleGenerationOfItsSeed) {
  NEED_MODEL(dir, "tiny");
  Worker w(make_cube3d_backend());
  Recorder r(w);
  JobSpec s = real_spec(dir, "a wooden table");
  s.request.seed = 9;
  s.request.top_p = 0.9f;
  s.request.variations = 2;
  s.preview.every = 4;
  s.preview.resolution_base = 4;
  const JobEvent* done = r.wait_terminal(w.submit(s), 120);
  ASSERT_NE(done, nullptr);
  const JobEvent job = *done;  // (the recorder's event list grows below)
  ASSERT_EQ(job.state, JobState::Done) << job.message;
  ASSERT_EQ(job.outputs.size(), 2u);
  ASSERT_TRUE(r.progress);
  const int per_shape = int(job.outputs[0]->tokens.size());
  EXPECT_EQ(r.progress->tokens_total, 2 * per_shape);
  EXPECT_EQ(r.progress->tokens_done, 2 * per_shape);
  EXPECT_EQ(job.outputs[1]->seed, 10u);
  EXPECT_NE(job.outputs[0]->tokens, job.outputs[1]->tokens);
  JobSpec one = s;
  one.request.seed = 10;
  one.request.variations = 1;
  const JobEvent* single = r.wait_terminal(w.submit(one), 120);
  ASSERT_NE(single, nullptr);
  ASSERT_EQ(single->state, JobState::Done) << single->message;
  EXPECT_EQ(single->output->tokens, job.outputs[1]->tokens);
  EXPECT_EQ(single->output->mesh->positions, job.outputs[1]->mesh->positions);
}

TEST(AiModel, UnknownWordsAndTruncatedPromptsAreExplained) {
  NEED_MODEL(dir, "tiny");
  ScopedConfigDir cfg("model_words");
  // A copy of the model that ships a vocabulary list, like the default model does.
  const fs::path m = cfg.dir / "with-words";
  fs::create_directories(m);
  for (auto& e : fs::directory_iterator(dir)) fs::create_symlink(e.path(), m / e.path().filename());
  std::ofstream(m / "known_words.txt") << "a\nchair\ntable\nlamp\nred\nwooden\n";
  Editor ed(real_options(m.string()));
  ASSERT_TRUE(ed.wait_model(60));
  ASSERT_EQ(ed.status()["model"]["known_words"], 6);
  ed.cmd("ai.set", quick());
  json r = ed.cmd("ai.generate", {{"prompt", "a red zorblax chair"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_EQ(r["warnings"].size(), 1u) << r.dump();
  const std::string w = r["warnings"][0];
  EXPECT_NE(w.find("unknown words: zorblax"), std::string::npos) << w;
  EXPECT_NE(w.find("the default model knows these objects: a, chair, lamp, red, table, wooden"), std::string::npos) << w;
  ASSERT_TRUE(ed.wait_idle(120));
  std::string longp;
  for (int i = 0; i < 90; ++i) longp += "chair ";
  r = ed.cmd("ai.generate", {{"prompt", longp}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_GE(r["warnings"].size(), 1u);
  EXPECT_NE(r["warnings"][0].get<std::string>().find("truncated"), std::string::npos) << r.dump();
  EXPECT_NE(r["warnings"][0].get<std::string>().find("90 tokens"), std::string::npos) << r.dump();
  ASSERT_TRUE(ed.wait_idle(120));
  // The negative prompt is checked the same way, and only where it is used (guidance > 0).
  r = ed.cmd("ai.generate", {{"prompt", "a red chair"}, {"negative_prompt", "a zorblax table"}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_EQ(r["warnings"].size(), 1u) << r.dump();
  EXPECT_NE(r["warnings"][0].get<std::string>().find("Negative prompt: unknown words: zorblax"), std::string::npos)
      << r.dump();
  ASSERT_TRUE(ed.wait_idle(120));
  r = ed.cmd("ai.generate", {{"prompt", "a red chair"}, {"negative_prompt", "a zorblax table"}, {"guidance", 0}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["warnings"].size(), 0u) << r.dump();
  ASSERT_TRUE(ed.wait_idle(120));
}

TEST(AiModel, CancelStopsWithinATokenStep) {
  NEED_MODEL(dir, "small");
  Worker w(make_cube3d_backend());
  Recorder r(w);
  const JobId id = w.submit(real_spec(dir, "a lamp"));
  ASSERT_TRUE(r.wait([&] { return r.progress && r.progress->job == id && r.progress->tokens_done >= 10; }, 120));
  const double t0 = now_ms();
  ASSERT_TRUE(w.cancel(id));
  const JobEvent* t = r.wait_terminal(id, 30);
  const double latency = now_ms() - t0;
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Cancelled);
  ASSERT_TRUE(t->partial);
  const double step = percentiles(t->partial->token_gaps_ms()).max;
  std::printf("[small] cancel after %zu tokens: Cancelled %.1f ms after cancel() (%d tokens after it); slowest token "
              "step %.1f ms\n",
              t->partial->token_ms.size(), latency, t->tokens_after_cancel, step);
  EXPECT_LT(t->partial->token_ms.size(), 128u);
  // One step may be in flight when cancel lands; the backend's check before the next one stops it. Counted in
  // tokens, not milliseconds: the wall time also holds this test thread's polling sleeps, which a loaded virtual
  // machine wakes up to 100 ms late (session 36).
  EXPECT_LE(t->tokens_after_cancel, 1) << "more than one token step after cancel (" << t->partial->backend << ")";
}

TEST(AiModel, UiFrameTimeStaysUnder50msWhileGeneratingOnTheCpu) {
  NEED_MODEL(dir, "small");
  ScopedConfigDir cfg("model_frames");
  ImGuiContext* ctx = ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(1280, 800);
  io.IniFilename = nullptr;
  unsigned char* px;
  int tw, th;
  io.Fonts->GetTexDataAsRGBA32(&px, &tw, &th);
  {
    Editor ed(real_options(dir), ctx);
    ASSERT_TRUE(ed.wait_model(120));
    ed.cmd("ai.set", {{"resolution", 6}, {"preview_resolution", 4}, {"preview_every", 8}});
    struct Ov : editor::OverlayDraw {
      void ghost_mesh(std::shared_ptr<const Mesh>, const editor::Transform&, editor::Vec4) override {}
      void line(Vec3, Vec3, editor::Vec4) override {}
      void box(Vec3, Vec3, const editor::Transform&, editor::Vec4) override {}
      std::array<float, 16> view_projection() const override { return {}; }
      std::array<float, 2> viewport_size() const override { return {800.f, 600.f}; }
    } ov;
    auto ui_frame = [&] {
      io.DeltaTime = 1.f / 60.f;
      ed.host.frame();
      ImGui::NewFrame();
      ImGui::Begin("Plugins###sidebar");
      ed.host.draw_panel(ed.host.panels()[0]);
      ImGui::End();
      ed.host.draw_overlays(ov);
      ImGui::Render();
    };
    ASSERT_TRUE(ed.cmd("ai.generate", {{"prompt", "a wooden chair"}})["ok"].get<bool>());
    // 60 Hz loop, like the editor with vsync: frame, then sleep to the next 16.7 ms tick. Per frame: the interval
    // between ticks (what a user sees), the UI thread's CPU time inside the frame, and the frame's own wall time
    // (ui_frame() alone, less the time the thread waited for a CPU in it): a UI thread that waits on a lock, the
    // worker or the disk shows in the last. The sleep to the tick is left out of it: on this CI's virtual machines
    // a 16 ms sleep has been seen to wake up to 100 ms late under disk load (at 100 ms boundaries, no run delay).
    std::vector<double> intervals, work, own;
    const bool have_delay = read_run_delay_ms().has_value();
    double last = now_ms();
    const double deadline = last + 300000;
    while (ed.plugin->controller()->busy() && now_ms() < deadline) {
      const double w0 = thread_cpu_ms(), f0 = now_ms(), d0 = thread_run_delay_ms();
      ui_frame();
      work.push_back(thread_cpu_ms() - w0);
      own.push_back((now_ms() - f0) - (thread_run_delay_ms() - d0));
      const double spent = now_ms() - last;
      if (spent < 16.7) std::this_thread::sleep_for(std::chrono::microseconds(int64_t((16.7 - spent) * 1000)));
      const double t = now_ms();
      intervals.push_back(t - last);
      last = t;
    }
    ui_frame();
    json st = ed.status();
    ASSERT_EQ(st["last"]["state"], "done") << st.dump(1);
    const Percentiles p = percentiles(intervals), pw = percentiles(work), po = percentiles(own);
    const json lat = st["last"]["latency"];
    std::printf("[small] UI frame while generating: p50 %.1f ms, p95 %.1f ms, max %.1f ms over %zu frames "
                "(plugin's own record: p95 %.1f, max %.1f; UI thread CPU per frame: p50 %.2f, max %.1f ms); job total %.0f ms, "
                "tpot p50 %.1f ms\n",
                p.p50, p.p95, p.max, p.n, lat["ui_frame_ms"]["p95"].get<double>(), lat["ui_frame_ms"]["max"].get<double>(),
                pw.p50, pw.max, lat["total_ms"].get<double>(), lat["tpot_ms"]["p50"].get<double>());
    EXPECT_GT(p.n, 30u);
    EXPECT_LT(p.p95, 50.0);
    EXPECT_LT(pw.max, 50.0) << "the plugin's own work on the UI thread took a whole frame budget";
    // The worst interval also holds scheduler delays caused by other processes (this CI box is shared, and ctest runs
    // two suites at once on two cores) and late timer wake-ups. Where the kernel reports how long the UI thread waited
    // for a CPU, every frame's own work (its wall time less that wait: the plugin's work, its locks, its file writes)
    // is judged: a UI thread blocked on inference or on the disk would still show (session 36: a settings fsync on the
    // UI thread did, 0.1-1 s under disk load). Elsewhere the raw worst frame is judged on a machine that is not
    // overloaded.
    if (have_delay) {
      std::printf("[small] worst frame's own work less the UI thread's wait for a CPU: %.1f ms (raw worst interval %.1f ms)\n",
                  po.max, p.max);
      EXPECT_LT(po.max, 50.0) << "a UI frame's own work took longer than 50 ms without the scheduler's delay";
    } else {
      double load[1] = {0};
      const long cores = sysconf(_SC_NPROCESSORS_ONLN);
      if (getloadavg(load, 1) == 1 && load[0] < 2.0 * double(cores))
        EXPECT_LT(p.max, 50.0);
      else if (p.max >= 50.0)
        std::printf("[small] note: max frame %.1f ms with load average %.1f on %ld cores (not judged)\n", p.max, load[0],
                    cores);
    }
  }
  ImGui::DestroyContext(ctx);
}
