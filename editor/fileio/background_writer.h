// Owns file writes on a thread of their own (library cubeforge_fileio), so the thread that asks (the UI thread) never
// waits on the disk: an fsync on a busy disk took 0.1-1 s (measured under write load, session 36), a frozen editor
// frame. Used by the editor's settings and by the AI plugin (history index, latency log, batch reports). The newest
// content handed over for a path wins; an older one still waiting for the same path is dropped. Appends to a path
// keep their order and follow its last whole write. flush() waits until everything handed over is on disk; the
// destructor flushes, so nothing handed over is lost at exit. A UI loop that must not wait asks busy() and
// take_failures() instead.
#pragma once
#include "fileio/atomic_file.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace cubeforge::fileio {

class BackgroundWriter {
 public:
  // hook: the write functions' test hook, called on the writer thread (tests park the writer in it)
  explicit BackgroundWriter(FaultHook hook = {}) : hook_(std::move(hook)) {}
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Hands over the whole new content of path (written by atomic_write_file, durable, its folder created first);
  // returns at once. It replaces whatever was still waiting for path. The thread starts on the first call.
  void write(const std::string& path, std::string bytes);
  // Hands over bytes to append to path (append_to_file, its folder created first); returns at once. Joined to what
  // is still waiting for path: after a waiting whole write, to its content.
  void append(const std::string& path, const std::string& bytes);
  // Waits until every write handed over so far has finished. True when all of them succeeded since the last flush;
  // otherwise last_error() says which failed and why (the failed content is not retried: a later write of the same
  // path carries the newer content anyway).
  bool flush();
  std::string last_error() const;

  // Never waits on the disk. True while anything handed over is waiting or being written.
  bool busy() const;
  // The writes that failed since the last call: path -> the newest error for it (bounded by the number of paths).
  // Never waits on the disk. A write's failure is here before busy() turns false.
  std::map<std::string, std::string> take_failures();

 private:
  struct Job {
    std::string bytes;
    bool append = false;  // false: the whole content
  };
  void run();
  void perform(const std::string& path, const Job& job) const;  // throws

  FaultHook hook_;
  mutable std::mutex m_;
  std::condition_variable work_cv_, idle_cv_;
  std::map<std::string, Job> pending_;
  bool writing_ = false, stop_ = false, failed_ = false;
  std::string error_;
  std::map<std::string, std::string> failures_;
  std::thread thread_;
};

}  // namespace cubeforge::fileio
