// Helpers for the AI worker tests: a mailbox recorder that polls the worker like the UI does, and waits.
#pragma once
#include "worker/worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

namespace cubeforge::ai::testing {

// How long the calling thread has been runnable but waiting for a CPU (the kernel's schedstat run delay), in ms, or
// nothing where the kernel does not report it. Timing checks subtract it: that wait is other processes' doing (ctest
// runs suites side by side on CI's two cores), a wait on a lock is not part of it.
inline std::optional<double> read_run_delay_ms() {
  std::ifstream f("/proc/thread-self/schedstat");
  unsigned long long run_ns = 0, delay_ns = 0;
  if (!(f >> run_ns >> delay_ns)) return std::nullopt;
  return double(delay_ns) / 1e6;
}
// The same, 0 where it is not reported (a difference of two readings is then 0: nothing is subtracted).
inline double thread_run_delay_ms() { return read_run_delay_ms().value_or(0.0); }

struct Recorder {
  Worker& w;
  std::vector<JobEvent> events;
  int previews = 0;
  std::vector<PreviewUpdate> preview_updates;
  std::optional<JobProgress> progress;
  std::vector<ModelStatus> models;

  explicit Recorder(Worker& worker) : w(worker) {}
  void pump() {
    Mail m = w.poll();
    for (auto& e : m.events) events.push_back(e);
    previews += m.previews;
    if (m.preview) preview_updates.push_back(*m.preview);
    if (m.progress) progress = m.progress;
    if (m.model) models.push_back(*m.model);
  }
  bool wait(const std::function<bool()>& cond, double timeout_s = 20) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
    while (std::chrono::steady_clock::now() < end) {
      pump();
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    pump();
    return cond();
  }
  std::vector<JobState> states(JobId id) const {
    std::vector<JobState> s;
    for (auto& e : events)
      if (e.job == id) s.push_back(e.state);
    return s;
  }
  bool saw(JobId id, JobState st) const {
    for (auto& e : events)
      if (e.job == id && e.state == st) return true;
    return false;
  }
  const JobEvent* terminal(JobId id) const {
    for (auto& e : events)
      if (e.job == id && is_terminal(e.state)) return &e;
    return nullptr;
  }
  const JobEvent* wait_terminal(JobId id, double timeout_s = 20) {
    wait([&] { return terminal(id) != nullptr; }, timeout_s);
    return terminal(id);
  }
};

inline JobSpec fake_spec(const std::string& prompt = "a red chair", uint64_t seed = 7) {
  JobSpec s;
  s.model_dir = "fake:tiny";
  s.request.prompt = prompt;
  s.request.seed = seed;
  s.preview.every = 8;
  return s;
}

}  // namespace cubeforge::ai::testing
