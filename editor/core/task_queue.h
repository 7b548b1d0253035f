// Main-thread task queue: any thread may post(); the UI thread drains it once per frame. Worker threads never touch
// the scene or GL themselves; they post a closure that does it on the main thread.
#pragma once
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cubeforge::editor {

class TaskQueue {
 public:
  TaskQueue() : owner_(std::this_thread::get_id()) {}
  void post(std::function<void()> task) {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  // Runs what was queued before the call (tasks posted while draining wait for the next frame). An exception from a
  // task is passed to on_error and the remaining tasks still run. Returns the number of tasks run.
  size_t drain(const std::function<void(const std::string&)>& on_error = {}) {
    std::vector<std::function<void()>> batch;
    {
      std::lock_guard lock(mu_);
      batch.swap(tasks_);
    }
    for (auto& t : batch) {
      try {
        t();
      } catch (const std::exception& ex) {
        if (on_error) on_error(ex.what());
      } catch (...) {
        if (on_error) on_error("unknown exception");
      }
    }
    return batch.size();
  }
  size_t pending() const {
    std::lock_guard lock(mu_);
    return tasks_.size();
  }
  bool on_owner_thread() const { return std::this_thread::get_id() == owner_; }
  void set_owner_thread() { owner_ = std::this_thread::get_id(); }

 private:
  mutable std::mutex mu_;
  std::vector<std::function<void()>> tasks_;
  std::thread::id owner_;
};

}  // namespace cubeforge::editor
