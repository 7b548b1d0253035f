// The AI worker's job state machine on a scripted backend: the normal path, cancel in every state (queued, loading,
// generating, meshing, after done), a failure injected in every stage (the worker recovers and the next job runs),
// cancel latency in token steps, mailbox behaviour, decimation and bbox fit, shutdown while busy.
#include "fake_backend.h"
#include "placement/placement.h"
#include "worker_test_util.h"

#include <gtest/gtest.h>

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

TEST(AiWorker, PollNeverWaitsOnTheWorker) {
  auto be = make_backend();
  be->script.tokens = 400;
  be->script.token_ms = 1;
  be->script.stage_ms = 30;
  std::atomic<int> wakes{0};
  WorkerOptions o;
  o.wake = [&] { wakes++; };
  Worker w(be, o);
  Recorder r(w);
  const JobId id = w.submit(fake_spec());
  ASSERT_EQ(r.wait_terminal(id)->state, JobState::Done);
  EXPECT_LT(r.max_poll_ms, 5.0);
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
