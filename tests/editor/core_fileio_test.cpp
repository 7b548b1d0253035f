// The file writes shared by the editor and its plugins (editor/fileio): the background writer never makes its caller
// wait (newest whole content wins, appends keep their order after the last whole write), reports failures by path
// without waiting, and writes what is pending when destroyed; atomic_write_file's own checks.
#include <gtest/gtest.h>

#include "core_test_util.h"
#include "fileio/background_writer.h"
#include "slurp.h"
#include "write_gate.h"

#include <cubeforge/error.h>

#include <fstream>
#include <vector>

using namespace cubeforge::fileio;
using cftest::slurp;
namespace fs = std::filesystem;

// A writer thread parked inside a write (the test hook holds it at the "write" stage, as a stalled fsync would):
// write() must still return, the newest content of a path must win over the ones handed over while it was parked,
// and flush() must wait for the last one.
TEST(BackgroundWriter, WriteNeverWaitsForTheDiskAndTheNewestContentWins) {
  cftest::TempDir dir;
  const std::string path = dir / "a.json";
  cftest::WriteGate gate;
  std::vector<std::string> written;  // the file names of the writes the writer started, in order (read after flush)
  BackgroundWriter w([&](const std::string& stage, const std::string& p) {
    if (stage != "write") return true;
    written.push_back(fs::path(p).filename().string());
    gate.park();  // the first write parks; later ones pass (released)
    return true;
  });
  w.write(path, "v1");
  ASSERT_TRUE(gate.wait_parked()) << "the writer never started";
  // parked inside the first write: these calls return although the writer cannot take them yet
  w.write(path, "v2");
  w.write(path, "v3");
  w.write((dir.path / "sub" / "b.json").string(), "b");
  EXPECT_TRUE(w.busy());
  gate.release();
  EXPECT_TRUE(w.flush());
  EXPECT_FALSE(w.busy());
  EXPECT_EQ(slurp(path), "v3");
  EXPECT_EQ(slurp((dir.path / "sub" / "b.json").string()), "b") << "the folder is created by the writer";
  // two writes of a.json (v1, then v3: v2 was replaced before it was written) and one of b.json
  EXPECT_EQ(written, (std::vector<std::string>{"a.json", "a.json", "b.json"}));
}

TEST(BackgroundWriter, FailuresAreReportedAndTheDestructorWritesWhatIsPending) {
  cftest::TempDir dir;
  std::ofstream(dir / "file") << "x";
  {
    BackgroundWriter w;
    w.write((dir.path / "file" / "s.json").string(), "{}");  // its folder is a file: the write fails
    EXPECT_FALSE(w.flush());
    EXPECT_NE(w.last_error().find("s.json"), std::string::npos) << w.last_error();
    EXPECT_TRUE(w.flush()) << "a flush reports the failures since the last one";
    w.write(dir / "late.json", "late");
    w.append(dir / "late.log", "line\n");
  }  // no flush: the destructor writes them
  EXPECT_EQ(slurp(dir / "late.json"), "late");
  EXPECT_EQ(slurp(dir / "late.log"), "line\n");
}

// Appends handed over while the writer is parked inside a whole write of the same file land after it, in order; a
// whole write replaces the appends still waiting, and appends after it extend it.
TEST(BackgroundWriter, AppendsKeepTheirOrderAfterTheLastWholeWrite) {
  cftest::TempDir dir;
  const std::string log = dir / "logs/l.jsonl";
  cftest::WriteGate gate;
  BackgroundWriter w([&](const std::string& stage, const std::string&) {
    if (stage == "write") gate.park();
    return true;
  });
  w.write(log, "head\n");
  ASSERT_TRUE(gate.wait_parked());
  w.append(log, "a\n");
  w.append(log, "b\n");
  gate.release();
  ASSERT_TRUE(w.flush()) << w.last_error();
  EXPECT_EQ(slurp(log), "head\na\nb\n");
  w.append(log, "c\n");
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(slurp(log), "head\na\nb\nc\n") << "an append adds to the file on disk";
  w.write(log, "new\n");
  w.append(log, "d\n");
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(slurp(log), "new\nd\n");
  w.append(log, "e\n");
  w.write(log, "");  // replaces the append, whether it was still waiting or already written
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(slurp(log), "");
}

// busy() and take_failures() answer while the writer is parked inside a write (a UI loop polls them every frame);
// a failure is listed by path, with the stage that failed, before busy() turns false.
TEST(BackgroundWriter, BusyAndFailuresAreKnownWithoutWaiting) {
  cftest::TempDir dir;
  const std::string slow = dir / "slow.json", bad = dir / "bad.json", log = dir / "bad.log";
  cftest::WriteGate gate;
  BackgroundWriter w([&](const std::string& stage, const std::string& p) {
    if (p == slow && stage == "write") gate.park();
    return !(p == bad && stage == "rename") && !(p == log && stage == "append");
  });
  EXPECT_FALSE(w.busy());
  w.write(slow, "s");
  ASSERT_TRUE(gate.wait_parked());
  w.write(bad, "b");
  w.append(log, "x\n");
  EXPECT_TRUE(w.busy());
  EXPECT_TRUE(w.take_failures().empty()) << "nothing has failed yet";
  gate.release();
  while (w.busy()) std::this_thread::yield();
  auto failures = w.take_failures();
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_NE(failures[bad].find("rename failed (injected)"), std::string::npos) << failures[bad];
  EXPECT_NE(failures[log].find("append failed (injected)"), std::string::npos) << failures[log];
  EXPECT_TRUE(w.take_failures().empty()) << "taken once";
  EXPECT_FALSE(w.flush()) << "flush() still reports them";
  EXPECT_EQ(slurp(slow), "s");
  EXPECT_FALSE(fs::exists(bad)) << "the failed write left no file";
}

TEST(AtomicFile, NonDurableWritesAreAtomicToo) {
  cftest::TempDir dir;
  const std::string path = dir / "t.png";
  atomic_write_file(path, "old", {}, false);
  auto fail_rename = [](const std::string& stage, const std::string&) { return stage != "rename"; };
  EXPECT_THROW(atomic_write_file(path, "new", fail_rename, false), cubeforge::Error);
  EXPECT_EQ(slurp(path), "old") << "a failed write leaves the old file";
  atomic_write_file(path, "new", {}, false);
  EXPECT_EQ(slurp(path), "new");
  for (const auto& f : fs::directory_iterator(dir.path))
    EXPECT_EQ(f.path().filename().string().find(".tmp-"), std::string::npos) << "temp left: " << f.path();
  EXPECT_THROW(atomic_write_file("", "x"), cubeforge::Error);
}
