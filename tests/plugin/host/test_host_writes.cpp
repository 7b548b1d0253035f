// The AI plugin's files written off the UI thread: with its background writer parked inside a write (as a stalled
// fsync would), jobs still end, the history and the batch run move on and frames keep coming; the files land after
// the release and the batch completes only then. A failed write reaches the user: the batch's report_error and an
// error message, and a message for the history index and the latency log. Unloading writes what was handed over.
#include "fake_setup.h"
#include "slurp.h"
#include "write_gate.h"

#include <algorithm>
#include <thread>

using namespace cubeforge;
using namespace cubeforge::ai;
using namespace cubeforge::ai::testing;
using cftest::slurp;

namespace {
bool is_file(const std::string& path, const char* name) { return fs::path(path).filename() == name; }
}  // namespace

TEST(AiHostWrites, HistoryIndexAndBatchReportAreWrittenOffTheUiThread) {
  cftest::WriteGate gate;  // outlives the plugin: its writer may be parked in it
  FakeSetup s("writes_parked", {}, [&](const std::string& stage, const std::string& path) {
    if (stage == "write" && is_file(path, "history.json")) gate.park();  // the first index write; later ones pass
    return true;
  });
  Editor& ed = *s.ed;
  const fs::path data = s.cfg.dir / "plugins" / "ai";
  const fs::path csv = s.cfg.dir / "rep" / "run.csv";
  json r = ed.cmd("ai.run_prompts", {{"prompts", {"a chair", "a table"}}, {"csv", csv.string()}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  // The first job's history index write parks the writer; the UI thread goes on: the second job ends too, and the
  // batch hands its report over, while nothing of it is on disk yet.
  ASSERT_TRUE(ed.pump_until([&] { return ed.status()["batch"]["finished"] == 2; })) << ed.all_messages();
  ASSERT_TRUE(gate.wait_parked());
  EXPECT_NE(gate.parked_on(), std::this_thread::get_id()) << "the index was written on the UI thread";
  json st = ed.status();
  EXPECT_TRUE(st["batch"]["report_pending"].get<bool>()) << st["batch"].dump();
  EXPECT_FALSE(st["batch"]["complete"].get<bool>()) << "complete only once the report is written";
  EXPECT_EQ(ed.cmd("ai.history").size(), 2u) << "the history moves on in memory";
  EXPECT_FALSE(fs::exists(data / "history" / "history.json"));
  EXPECT_FALSE(fs::exists(csv));
  for (int i = 0; i < 5; ++i) ed.frame();  // frames go on while the writer is parked
  EXPECT_FALSE(ed.status()["batch"]["complete"].get<bool>());

  gate.release();
  ASSERT_TRUE(ed.pump_until([&] { return ed.status()["batch"]["complete"].get<bool>(); }));
  st = ed.status();
  EXPECT_EQ(st["batch"]["report_error"], "");
  EXPECT_NE(ed.all_messages().find("Batch of 2 prompts finished"), std::string::npos) << ed.all_messages();
  const std::string report = slurp(csv);
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 3) << report;
  const json index = json::parse(slurp(data / "history" / "history.json"));
  EXPECT_EQ(index["entries"].size(), 2u);
  const std::string log = slurp(data / "latency.jsonl");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
}

TEST(AiHostWrites, FailedWritesReachTheUser) {
  FakeSetup s("writes_failing", {}, [](const std::string& stage, const std::string& path) {
    return !(stage == "rename" && (is_file(path, "run.csv") || is_file(path, "history.json"))) &&
           !(stage == "append" && is_file(path, "latency.jsonl"));
  });
  Editor& ed = *s.ed;
  const fs::path csv = s.cfg.dir / "rep" / "run.csv", js = s.cfg.dir / "rep" / "run.json";
  json r = ed.cmd("ai.run_prompts", {{"prompts", {"a chair"}}, {"csv", csv.string()}, {"json", js.string()}});
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  ASSERT_TRUE(ed.pump_until([&] { return ed.status()["batch"]["complete"].get<bool>(); }));
  const json st = ed.status();
  const std::string error = st["batch"]["report_error"];
  EXPECT_NE(error.find("rename failed (injected)"), std::string::npos) << st["batch"].dump();
  EXPECT_NE(error.find("run.csv"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(csv));
  EXPECT_TRUE(fs::exists(js)) << "the other report file is written";
  const std::string errors = ed.errors(), all = ed.all_messages();
  EXPECT_NE(errors.find("Batch report not written: " + error), std::string::npos) << all;
  EXPECT_NE(all.find("warning: History not saved: rename failed (injected)"), std::string::npos) << all;
  EXPECT_NE(all.find("warning: Latency log not saved: append failed (injected)"), std::string::npos) << all;
  EXPECT_EQ(all.find("Batch of 1 prompts finished"), std::string::npos) << all;
}

// Unloading the plugin right after a job, without a frame more, still writes the history index and the latency line.
TEST(AiHostWrites, UnloadWritesWhatWasHandedOver) {
  FakeSetup s("writes_unload");
  ASSERT_TRUE(s.ed->cmd("ai.generate", {{"prompt", "a lamp"}, {"auto_place", false}})["ok"].get<bool>());
  ASSERT_TRUE(s.ed->wait_idle());
  s.restart();
  EXPECT_EQ(s.ed->cmd("ai.history").size(), 1u);
  EXPECT_EQ(s.ed->status()["latency_records"], 1);
}
