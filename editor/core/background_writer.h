// Atomic file writes on a thread of their own, so the thread that asks (the UI thread) never waits on the disk: an
// fsync on a busy disk took 0.1-1 s (measured under write load, session 36), a frozen editor frame. The newest
// content handed over for a path wins; an older one still waiting for the same path is dropped. flush() waits until
// everything handed over is on disk; the destructor flushes, so nothing handed over is lost at exit.
#pragma once
#include "atomic_file.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace cubeforge::editor {

class BackgroundWriter {
 public:
  // hook: atomic_write_file's test hook, called on the writer thread (tests park the writer in it)
  explicit BackgroundWriter(FaultHook hook = {}) : hook_(std::move(hook)) {}
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Hands over the whole new content of path (written by atomic_write_file, its folder created first); returns at
  // once. The thread starts on the first call.
  void write(const std::string& path, std::string bytes);
  // Waits until every write handed over so far has finished. True when all of them succeeded since the last flush;
  // otherwise last_error() says which failed and why (the failed content is not retried: a later write of the same
  // path carries the newer content anyway).
  bool flush();
  std::string last_error() const;

 private:
  void run();

  FaultHook hook_;
  mutable std::mutex m_;
  std::condition_variable work_cv_, idle_cv_;
  std::map<std::string, std::string> pending_;
  bool writing_ = false, stop_ = false, failed_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace cubeforge::editor
