// Autosave off the UI thread: the editor hands over a copy of its scene (the entities share their immutable meshes,
// so the copy is cheap) and the recovery files are written on a thread of the Autosaver's own, so a periodic
// autosave never freezes a frame on a slow disk (scene_io writes every file with fsync). At most one write runs at
// a time; a change made meanwhile is written by the next one.
#pragma once
#include "fileio/atomic_file.h"
#include "scene.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace cubeforge::editor {

class Autosaver {
 public:
  // hook: scene_io's test hook, called on the writer thread (tests park the write in it)
  explicit Autosaver(fileio::FaultHook hook = {}) : hook_(std::move(hook)) {}
  ~Autosaver();  // waits for a write in flight
  Autosaver(const Autosaver&) = delete;
  Autosaver& operator=(const Autosaver&) = delete;

  // Starts writing the recovery files of `scene` (Document::write_recovery_of) unless a write is still running
  // (then false and nothing happens). counter: the document's change counter the copy was taken at.
  bool start(Scene scene, std::string original, uint64_t counter);
  bool busy() const;
  // The outcome of a write that has finished since the last call (nothing while one runs or when none finished):
  // the change counter it was started with, and its error (empty: the recovery files are written).
  struct Finished {
    uint64_t counter = 0;
    std::string error;
  };
  std::optional<Finished> take_finished();
  // Waits until no write runs (before the editor discards the recovery files on a clean exit).
  void wait();

 private:
  fileio::FaultHook hook_;
  mutable std::mutex m_;
  std::condition_variable done_cv_;
  bool running_ = false, finished_ = false;
  uint64_t counter_ = 0;
  std::string error_;
  std::thread thread_;
};

}  // namespace cubeforge::editor
