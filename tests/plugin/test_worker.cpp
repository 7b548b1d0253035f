// The AI worker's job state machine on a scripted backend: the normal path, cancel in every state (queued, loading,
// generating, meshing, after done), a failure injected in every stage (the worker recovers and the next job runs),
// cancel latency in token steps, mailbox behaviour, decimation and bbox fit, shutdown while busy, and variations
// (progress over every variation on the CPU and in a GPU-style batch, one output per variation with its seed, the
// history hook per output, cancel between variations).
#include "fake_backend.h"
#include "placement/placement.h"
#include "worker_test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

using namespace cubeforge;
using namespace cubeforge::ai;
using namespace cubeforge::ai::testing;

namespace {
std::shared_ptr<FakeBackend> make_backend() { return std::make_shared<FakeBackend>(); }
}  // namespace

TEST(AiWorker, NormalPathGoesThroughEveryState) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  const JobEvent* t = r.wait_terminal(id);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Done) << t->message;
  const std::vector<JobState> want = {JobState::Queued, JobState::Loading, JobState::Generating, JobState::Meshing,
                                      JobState::Done};
  EXPECT_EQ(r.states(id), want);
  ASSERT_TRUE(t->output);
  ASSERT_TRUE(t->output->mesh);
  EXPECT_EQ(t->output->tokens.size(), 64u);
  EXPECT_GT(r.previews, 0);
  // Base-centred, Y up.
  const Bounds b = mesh_bounds(*t->output->mesh);
  EXPECT_NEAR(b.min[1], 0.f, 1e-5f);
  EXPECT_NEAR(b.min[0] + b.max[0], 0.f, 1e-5f);
  EXPECT_NEAR(b.min[2] + b.max[2], 0.f, 1e-5f);
  EXPECT_GT(t->output->load_ms, 0.0);
  ASSERT_TRUE(r.progress);
  EXPECT_EQ(r.progress->tokens_total, 64);

  // Second job on the same model: no reload.
  const JobId id2 = w.submit(fake_spec("a table", 8));
  const JobEvent* t2 = r.wait_terminal(id2);
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t2->state, JobState::Done);
  EXPECT_EQ(be->loads.load(), 1);
  EXPECT_EQ(t2->output->load_ms, 0.0);
  EXPECT_TRUE(w.idle());
}

// The job's vertex colour is on every vertex of its output; a job without one leaves the mesh uncoloured.
TEST(AiWorker, OutputsCarryTheJobsVertexColour) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  JobSpec painted = fake_spec("a red lamp", 5);
  painted.vertex_colour = std::array<float, 3>{0.6f, 0.05f, 0.02f};
  const JobId a = w.submit(painted), b = w.submit(fake_spec("a lamp", 5));
  ASSERT_NE(r.wait_terminal(b), nullptr);
  const Mesh& ma = *r.terminal(a)->output->mesh;
  ASSERT_FALSE(ma.positions.empty());
  ASSERT_EQ(ma.colors.size(), ma.positions.size());
  for (const Vec3& c : ma.colors) EXPECT_EQ(c, *painted.vertex_colour);
  EXPECT_TRUE(r.terminal(b)->output->mesh->colors.empty());
}

TEST(AiWorker, SameSeedSameTokens) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  const JobId a = w.submit(fake_spec("a lamp", 3)), b = w.submit(fake_spec("a lamp", 3)), c = w.submit(fake_spec("a lamp", 4));
  ASSERT_NE(r.wait_terminal(c), nullptr);
  EXPECT_EQ(r.terminal(a)->output->tokens, r.terminal(b)->output->tokens);
  EXPECT_NE(r.terminal(a)->output->tokens, r.terminal(c)->output->tokens);
}

TEST(AiWorker, PreloadReportsProgressThenReady) {
  auto be = make_backend();
  be->script.load_ms = 50;
  Worker w(be);
  Recorder r(w);
  w.load_model("fake:tiny");
  ASSERT_TRUE(r.wait([&] { return w.model_status().state == ModelStatus::State::Ready; }));
  r.pump();
  ASSERT_FALSE(r.models.empty());
  EXPECT_EQ(r.models.back().state, ModelStatus::State::Ready);
  ASSERT_TRUE(r.models.back().info);
  EXPECT_EQ(r.models.back().info->num_tokens, 64);
  EXPECT_GT(r.models.back().load_ms, 0.0);
  // A job after the preload does not load again.
  const JobId id = w.submit(fake_spec());
  ASSERT_EQ(r.wait_terminal(id)->state, JobState::Done);
  EXPECT_EQ(be->loads.load(), 1);
}

TEST(AiWorker, SwitchingModelCancelsARunningPreload) {
  auto be = make_backend();
  be->script.gate_at = "load";
  Worker w(be);
  Recorder r(w);
  w.load_model("fake:first");
  ASSERT_TRUE(r.wait([&] { return be->at_gate.load(); }));
  be->script.gate_at.clear();
  w.load_model("fake:second");
  ASSERT_TRUE(r.wait([&] {
    auto st = w.model_status();
    return st.state == ModelStatus::State::Ready && st.dir == "fake:second";
  }));
}

TEST(AiWorker, BadModelDirectoryFailsTheJobAndTheNextOneRuns) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  JobSpec bad = fake_spec();
  bad.model_dir = "/no/such/model";
  const JobId id = w.submit(bad);
  const JobEvent* t = r.wait_terminal(id);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Failed);
  EXPECT_NE(t->message.find("does not exist"), std::string::npos) << t->message;
  EXPECT_EQ(w.model_status().state, ModelStatus::State::Failed);
  EXPECT_NE(w.model_status().error.find("/no/such/model"), std::string::npos);
  const JobId ok = w.submit(fake_spec());
  EXPECT_EQ(r.wait_terminal(ok)->state, JobState::Done);
}

// ---- cancel in every state ------------------------------------------------------------------------------------
TEST(AiWorkerCancel, WhileQueuedIsImmediateEvenWhenTheWorkerIsBusy) {
  auto be = make_backend();
  be->script.gate_at = "token:3";
  Worker w(be);
  Recorder r(w);
  const JobId first = w.submit(fake_spec("first"));
  const JobId second = w.submit(fake_spec("second"));
  ASSERT_TRUE(r.wait([&] { return be->at_gate.load(); }));
  EXPECT_TRUE(w.cancel(second));
  r.pump();  // the Cancelled event is already in the mailbox: no waiting on the worker
  ASSERT_NE(r.terminal(second), nullptr);
  EXPECT_EQ(r.terminal(second)->state, JobState::Cancelled);
  EXPECT_EQ(r.states(second), (std::vector<JobState>{JobState::Queued, JobState::Cancelled}));
  be->release();
  EXPECT_EQ(r.wait_terminal(first)->state, JobState::Done);
  EXPECT_FALSE(r.saw(second, JobState::Loading));
}

TEST(AiWorkerCancel, WhileLoading) {
  auto be = make_backend();
  be->script.gate_at = "load";
  Worker w(be);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  ASSERT_TRUE(r.wait([&] { return be->at_gate.load(); }));
  r.pump();
  EXPECT_TRUE(r.saw(id, JobState::Loading));
  EXPECT_TRUE(w.cancel(id));
  const JobEvent* t = r.wait_terminal(id, 5);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Cancelled);
  EXPECT_FALSE(r.saw(id, JobState::Generating));
  EXPECT_NE(w.model_status().state, ModelStatus::State::Ready);
  // The next job loads the model again and runs.
  be->script.gate_at.clear();
  const JobId next = w.submit(fake_spec());
  EXPECT_EQ(r.wait_terminal(next)->state, JobState::Done);
  EXPECT_EQ(be->loads.load(), 2);
}

TEST(AiWorkerCancel, WhileGeneratingStopsWithinOneTokenStep) {
  auto be = make_backend();
  be->script.tokens = 5000;
  be->script.token_ms = 2;
  Worker w(be);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  ASSERT_TRUE(r.wait([&] { return be->tokens_emitted.load() >= 20; }));
  const int at_cancel = be->tokens_emitted.load();
  EXPECT_TRUE(w.cancel(id));
  const JobEvent* t = r.wait_terminal(id, 5);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Cancelled);
  EXPECT_LE(be->tokens_emitted.load() - at_cancel, 1) << "more than one token step after cancel";
  // the worker's own count of tokens that arrived after the cancel (at most the ones emitted since at_cancel)
  EXPECT_LE(t->tokens_after_cancel, be->tokens_emitted.load() - at_cancel);
  ASSERT_TRUE(t->partial);
  EXPECT_GE(int(t->partial->token_ms.size()), 20);
  EXPECT_FALSE(r.saw(id, JobState::Meshing));
}

TEST(AiWorkerCancel, WhileMeshing) {
  auto be = make_backend();
  be->script.gate_at = "occupancy";
  Worker w(be);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  ASSERT_TRUE(r.wait([&] { return be->at_gate.load(); }));
  r.pump();
  EXPECT_TRUE(r.saw(id, JobState::Meshing));
  EXPECT_TRUE(w.cancel(id));
  const JobEvent* t = r.wait_terminal(id, 5);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Cancelled);
  EXPECT_FALSE(t->output);
}

TEST(AiWorkerCancel, AfterDoneIsANoOp) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  ASSERT_EQ(r.wait_terminal(id)->state, JobState::Done);
  EXPECT_FALSE(w.cancel(id));
  r.pump();
  EXPECT_EQ(r.states(id).back(), JobState::Done);
  EXPECT_EQ(r.states(id).size(), 5u);
}

TEST(AiWorkerCancel, CancelAllDropsTheQueueAndStopsTheRunningJob) {
  auto be = make_backend();
  be->script.gate_at = "token:2";
  Worker w(be);
  Recorder r(w);
  std::vector<JobId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(w.submit(fake_spec("p" + std::to_string(i))));
  ASSERT_TRUE(r.wait([&] { return be->at_gate.load(); }));
  w.cancel_all();
  for (JobId id : ids) {
    const JobEvent* t = r.wait_terminal(id, 5);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->state, JobState::Cancelled);
  }
  EXPECT_TRUE(r.wait([&] { return w.idle(); }));
}

// ---- failures injected in every stage ---------------------------------------------------------------------------
class AiWorkerBackendFailure : public ::testing::TestWithParam<const char*> {};

TEST_P(AiWorkerBackendFailure, FailsWithTheMessageAndTheNextJobRuns) {
  auto be = make_backend();
  be->script.fail_at = GetParam();
  Worker w(be);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  const JobEvent* t = r.wait_terminal(id);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Failed);
  EXPECT_NE(t->message.find("injected"), std::string::npos) << t->message;
  EXPECT_FALSE(t->output);
  if (std::string(GetParam()) == "load") {
    EXPECT_EQ(w.model_status().state, ModelStatus::State::Failed);
    EXPECT_NE(w.model_status().error.find("corrupt"), std::string::npos);
  }
  be->script.fail_at.clear();
  const JobId next = w.submit(fake_spec());
  const JobEvent* t2 = r.wait_terminal(next);
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t2->state, JobState::Done) << t2->message;
}

INSTANTIATE_TEST_SUITE_P(Stages, AiWorkerBackendFailure,
                         ::testing::Values("load", "text", "token:0", "token:40", "preview", "latents", "occupancy",
                                           "meshing", "cleanup"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == ':') c = '_';
                           return n;
                         });

class AiWorkerWorkerFault : public ::testing::TestWithParam<const char*> {};

TEST_P(AiWorkerWorkerFault, FailsAndRecovers) {
  auto be = make_backend();
  std::atomic<bool> armed{true};
  const std::string point = GetParam();
  WorkerOptions o;
  o.fault = [&](const std::string& p, JobId) {
    if (armed && p == point) throw std::runtime_error("injected fault at " + p);
  };
  if (point == "save") o.finish = [&](const JobSpec&, JobOutput&) {
    if (armed) throw std::runtime_error("injected fault at save");
  };
  Worker w(be, o);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  const JobEvent* t = r.wait_terminal(id);
  ASSERT_NE(t, nullptr);
  if (point == "save") {
    // A failed history save does not lose the result.
    EXPECT_EQ(t->state, JobState::Done);
    EXPECT_NE(t->output->save_error.find("injected"), std::string::npos);
  } else {
    EXPECT_EQ(t->state, JobState::Failed);
    EXPECT_NE(t->message.find("injected fault at " + point), std::string::npos) << t->message;
  }
  armed = false;
  const JobId next = w.submit(fake_spec());
  EXPECT_EQ(r.wait_terminal(next)->state, JobState::Done);
}

INSTANTIATE_TEST_SUITE_P(Points, AiWorkerWorkerFault,
                         ::testing::Values("start", "load", "token", "preview", "meshing", "decimate", "finish", "save"));

// ---- results --------------------------------------------------------------------------------------------------
TEST(AiWorker, FaceCapDecimates) {
  auto be = make_backend();
  be->script.mesh_subdiv = 10;  // 1200 faces
  Worker w(be);
  Recorder r(w);
  JobSpec s = fake_spec();
  s.face_cap = 300;
  const JobEvent* t = r.wait_terminal(w.submit(s));
  ASSERT_EQ(t->state, JobState::Done) << t->message;
  EXPECT_EQ(t->output->faces_before_cap, 1200u);
  EXPECT_LE(t->output->mesh->face_count(), 300u);
  EXPECT_GT(t->output->mesh->face_count(), 0u);
}

TEST(AiWorker, BoundingBoxFitsUniformly) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  JobSpec s = fake_spec();
  s.request.bbox = std::array<float, 3>{2.f, 1.f, 2.f};  // the fake mesh is 1 x 2 x 0.5
  const JobEvent* t = r.wait_terminal(w.submit(s));
  ASSERT_EQ(t->state, JobState::Done) << t->message;
  EXPECT_NEAR(t->output->fit_scale, 0.5f, 1e-6f);
  const Vec3 size = mesh_bounds(*t->output->mesh).size();
  EXPECT_NEAR(size[0], 0.5f, 1e-5f);
  EXPECT_NEAR(size[1], 1.0f, 1e-5f);
  EXPECT_NEAR(size[2], 0.25f, 1e-5f);
}

TEST(AiWorker, EmptyMeshIsDoneNotACrash) {
  auto be = make_backend();
  be->script.empty_mesh = true;
  Worker w(be);
  Recorder r(w);
  const JobEvent* t = r.wait_terminal(w.submit(fake_spec()));
  ASSERT_EQ(t->state, JobState::Done);
  EXPECT_TRUE(t->output->mesh->empty());
}

TEST(AiWorker, ProgressReportsRateAndEta) {
  auto be = make_backend();
  be->script.tokens = 200;
  be->script.token_ms = 1;
  Worker w(be);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  ASSERT_TRUE(r.wait([&] { return r.progress && r.progress->tokens_done >= 50; }));
  EXPECT_EQ(r.progress->job, id);
  EXPECT_EQ(r.progress->tokens_total, 200);
  EXPECT_GT(r.progress->tokens_per_s, 10.0);
  EXPECT_GE(r.progress->eta_ms, 0.0);
  ASSERT_EQ(r.wait_terminal(id)->state, JobState::Done);
}

// The UI's poll must never wait for the worker's work. The worker is parked inside the backend (before a decode step)
// and stays there until released: every poll must still come back, with the mail sent so
// far. A poll that joined the worker or waited on a step would never return; each is given 5 s on its own thread,
// so a failure is reported instead of hanging the suite. (No millisecond threshold: on a loaded two-core CI box a
// preempted poll says nothing about the worker.)
TEST(AiWorker, PollNeverWaitsOnTheWorker) {
  auto be = make_backend();
  be->script.tokens = 400;
  be->script.token_ms = 1;
  be->script.gate_at = "token:200";
  std::atomic<int> wakes{0};
  WorkerOptions o;
  o.wake = [&] { wakes++; };
  Worker w(be, o);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  ASSERT_TRUE(r.wait([&] { return be->at_gate.load(); }));
  for (int i = 0; i < 20; ++i) {
    auto f = std::async(std::launch::async, [&] { r.pump(); });
    if (f.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      be->release();  // unpark so the stuck poll can finish and the test can report
      f.wait();
      FAIL() << "poll " << i << " waited on the worker parked in the backend";
    }
  }
  EXPECT_TRUE(be->at_gate.load()) << "the worker left the gate without being released";
  ASSERT_TRUE(r.progress.has_value());
  EXPECT_EQ(r.progress->job, id);
  EXPECT_GT(r.progress->tokens_done, 0);
  EXPECT_LE(r.progress->tokens_done, 200);
  EXPECT_TRUE(r.saw(id, JobState::Generating));
  EXPECT_EQ(r.terminal(id), nullptr);
  be->release();
  ASSERT_EQ(r.wait_terminal(id)->state, JobState::Done);
  EXPECT_GT(wakes.load(), 0);
  // Wakes for progress are throttled: far fewer than one per token.
  EXPECT_LT(wakes.load(), 400);
}

TEST(AiWorker, ShutdownWhileGeneratingReturnsQuickly) {
  auto be = make_backend();
  be->script.tokens = 100000;
  be->script.token_ms = 1;
  auto w = std::make_unique<Worker>(be);
  Recorder r(*w);
  w->submit(fake_spec());
  ASSERT_TRUE(r.wait([&] { return be->tokens_emitted.load() > 5; }));
  const auto t0 = std::chrono::steady_clock::now();
  w.reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST(AiWorker, SubmitAfterShutdownIsCancelled) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  w.shutdown();
  const JobId id = w.submit(fake_spec());
  r.pump();
  ASSERT_NE(r.terminal(id), nullptr);
  EXPECT_EQ(r.terminal(id)->state, JobState::Cancelled);
}

// ---- variations -----------------------------------------------------------------------------------------------
namespace {
JobSpec variations_spec(int n, uint64_t seed = 20) {
  JobSpec s = fake_spec("a lamp", seed);
  s.request.top_p = 0.9f;
  s.request.variations = n;
  return s;
}

// A job of 3 variations of 32 tokens each, held at a gate of the fake ("token:K@v").
struct HeldVariations {
  std::shared_ptr<FakeBackend> be = make_backend();
  std::unique_ptr<Worker> w;
  std::unique_ptr<Recorder> r;
  JobId id = 0;
  HeldVariations(const std::string& gate, bool batch) {
    be->script.tokens = 32;
    be->script.gate_at = gate;
    be->script.batch_variations = batch;
    w = std::make_unique<Worker>(be);
    r = std::make_unique<Recorder>(*w);
    id = w->submit(variations_spec(3));
  }
  // True once the job waits at the gate and the progress shows `done` tokens.
  bool held_at(int done) {
    return r->wait([&] { return be->at_gate.load() && r->progress && r->progress->tokens_done == done; });
  }
  const JobProgress& progress() const { return *r->progress; }
};
}  // namespace

// The CPU decodes the variations one after the other: done counts the finished ones in full.
TEST(AiWorkerVariations, ProgressCountsEveryVariationOneAfterTheOther) {
  HeldVariations h("token:5@1", false);  // variation 1 (the second), before its token 5
  ASSERT_TRUE(h.held_at(37)) << (h.r->progress ? h.r->progress->tokens_done : -1);
  EXPECT_EQ(h.progress().tokens_total, 96);
  EXPECT_EQ(h.progress().variations, 3);
  EXPECT_EQ(h.progress().variation, 1);
  EXPECT_EQ(h.progress().variations_decoding, 1);
  h.be->release();
  ASSERT_EQ(h.r->wait_terminal(h.id)->state, JobState::Done);
}

// A GPU batch decodes them together: every variation advances each step.
TEST(AiWorkerVariations, ProgressCountsEveryVariationInABatch) {
  HeldVariations h("token:5@2", true);  // step 5: variations 0 and 1 have 6 tokens, variation 2 has 5
  ASSERT_TRUE(h.held_at(17)) << (h.r->progress ? h.r->progress->tokens_done : -1);
  EXPECT_EQ(h.progress().tokens_total, 96);
  EXPECT_EQ(h.progress().variations_decoding, 3);
  h.be->release();
  const JobEvent* t = h.r->wait_terminal(h.id);
  ASSERT_EQ(t->state, JobState::Done) << t->message;
  ASSERT_EQ(t->outputs.size(), 3u);
  for (const auto& o : t->outputs) EXPECT_EQ(o->tokens.size(), 32u);
}

// Each output is one variation, base-centred like a single result, with seed + v; variation v equals the single
// generation of that seed, and the variations differ from each other.
TEST(AiWorkerVariations, OneOutputPerVariationWithItsSeed) {
  auto be = make_backend();
  std::vector<std::pair<int, uint64_t>> saved;  // (variation, seed) per finish call of the job of 3
  WorkerOptions o;
  o.finish = [&](const JobSpec& spec, JobOutput& out) {
    if (spec.request.variations != 3) return;  // the single generation below
    saved.emplace_back(out.variation, out.seed);
    out.saved_id = "saved-" + std::to_string(out.variation);
  };
  Worker w(be, o);
  Recorder r(w);
  const JobEvent* done = r.wait_terminal(w.submit(variations_spec(3, 20)));
  ASSERT_NE(done, nullptr);
  const JobEvent t = *done;  // (the recorder's event list grows below)
  ASSERT_EQ(t.state, JobState::Done) << t.message;
  ASSERT_EQ(t.outputs.size(), 3u);
  EXPECT_EQ(t.output, t.outputs[0]);
  EXPECT_EQ(saved, (std::vector<std::pair<int, uint64_t>>{{0, 20}, {1, 21}, {2, 22}}));
  for (int v = 0; v < 3; ++v) {
    const JobOutput& out = *t.outputs[std::size_t(v)];
    EXPECT_EQ(out.variation, v);
    EXPECT_EQ(out.seed, 20u + uint64_t(v));
    EXPECT_EQ(out.saved_id, "saved-" + std::to_string(v));
    EXPECT_EQ(out.tokens.size(), 64u);
    const Bounds b = mesh_bounds(*out.mesh);
    EXPECT_NEAR(b.min[1], 0.f, 1e-5f);
    EXPECT_NEAR(b.min[0] + b.max[0], 0.f, 1e-5f);
    EXPECT_EQ(out.mesh->normals.size(), out.mesh->vertex_count());  // computed once, after the decimation
    EXPECT_EQ(out.wall_ms, t.outputs[0]->wall_ms);
  }
  EXPECT_NE(t.outputs[0]->tokens, t.outputs[1]->tokens);
  EXPECT_NE(t.outputs[1]->mesh->positions, t.outputs[2]->mesh->positions);
  // Variation 1 is exactly the single generation of seed 21.
  const JobEvent* single = r.wait_terminal(w.submit(fake_spec("a lamp", 21)));
  ASSERT_EQ(single->state, JobState::Done);
  EXPECT_EQ(single->outputs.size(), 1u);
  EXPECT_EQ(single->output->tokens, t.outputs[1]->tokens);
  EXPECT_EQ(single->output->mesh->positions, t.outputs[1]->mesh->positions);
}

TEST(AiWorkerVariations, FaceCapAppliesToEveryVariation) {
  auto be = make_backend();
  be->script.mesh_subdiv = 10;  // 1200 faces
  Worker w(be);
  Recorder r(w);
  JobSpec s = variations_spec(2);
  s.face_cap = 300;
  const JobEvent* t = r.wait_terminal(w.submit(s));
  ASSERT_EQ(t->state, JobState::Done) << t->message;
  for (const auto& o : t->outputs) {
    EXPECT_EQ(o->faces_before_cap, 1200u);
    EXPECT_LE(o->mesh->face_count(), 300u);
  }
}

TEST(AiWorkerVariations, CancelBetweenVariationsStopsTheJob) {
  HeldVariations h("token:3@1", false);
  ASSERT_TRUE(h.held_at(35));
  EXPECT_TRUE(h.w->cancel(h.id));
  const JobEvent* t = h.r->wait_terminal(h.id, 5);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state, JobState::Cancelled);
  EXPECT_TRUE(t->outputs.empty());
  EXPECT_FALSE(h.r->saw(h.id, JobState::Meshing));
  ASSERT_TRUE(t->partial);
  EXPECT_EQ(t->partial->token_ms.size(), 35u);  // variation 0 in full + 3 of variation 1
  EXPECT_EQ(h.be->tokens_emitted.load(), 35);
  // The worker goes on with the next job.
  h.be->script.gate_at.clear();
  EXPECT_EQ(h.r->wait_terminal(h.w->submit(variations_spec(2)))->state, JobState::Done);
}

// A failure in a later variation fails the whole job (nothing half-delivered, nothing saved).
TEST(AiWorkerVariations, AFailureInAnyVariationFailsTheJob) {
  auto be = make_backend();
  std::atomic<int> finishes{0};
  WorkerOptions o;
  o.finish = [&](const JobSpec&, JobOutput&) { finishes++; };
  be->script.fail_at = "token:10@2";
  Worker w(be, o);
  Recorder r(w);
  const JobEvent* t = r.wait_terminal(w.submit(variations_spec(3)));
  ASSERT_EQ(t->state, JobState::Failed);
  EXPECT_NE(t->message.find("injected"), std::string::npos);
  EXPECT_TRUE(t->outputs.empty());
  EXPECT_EQ(finishes.load(), 0);
  EXPECT_TRUE(r.wait([&] { return w.idle(); }));
}

// The backend checks the request like the library: several variations need top-p.
TEST(AiWorkerVariations, GreedyVariationsFailWithTheReason) {
  auto be = make_backend();
  Worker w(be);
  Recorder r(w);
  JobSpec s = variations_spec(2);
  s.request.top_p.reset();
  const JobEvent* t = r.wait_terminal(w.submit(s));
  ASSERT_EQ(t->state, JobState::Failed);
  EXPECT_NE(t->message.find("top-p"), std::string::npos) << t->message;
}

// A GPU batch that fails mid-way restarts on the CPU from variation 0: the counts restart with it.
TEST(AiWorkerVariations, TokenCounterRestartsWithTheLibrary) {
  TokenCounter c(3);
  for (int i = 0; i < 4; ++i)
    for (int v = 0; v < 3; ++v) c.add(TokenEvent{i, 1, double(i), v});
  EXPECT_EQ(c.tokens(), 12);
  EXPECT_EQ(c.decoding(8), 3);
  c.add(TokenEvent{0, 1, 10.0, 0});  // the CPU starts over with variation 0
  EXPECT_EQ(c.tokens(), 1);
  EXPECT_EQ(c.decoding(8), 1);
  for (int i = 1; i < 8; ++i) c.add(TokenEvent{i, 1, 10.0 + i, 0});
  c.add(TokenEvent{0, 1, 20.0, 1});
  EXPECT_EQ(c.tokens(), 9);
  EXPECT_EQ(c.decoding(8), 1);  // variation 0 finished, 1 decoding
  const auto ms = c.token_ms();
  EXPECT_TRUE(std::is_sorted(ms.begin(), ms.end()));
}
