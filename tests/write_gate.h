// Test helper for background writes: parks the writer thread inside its FaultHook (as a stalled fsync would) until
// the test releases it, and remembers which thread it parked, so a test can prove the caller did not wait.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace cftest {

class WriteGate {
 public:
  // From the hook: parks the calling thread until release(). Bounded (30 s), so a write made on the caller's own
  // thread fails the test's checks instead of hanging it.
  void park() {
    std::unique_lock lk(mu_);
    parked_ = true;
    parked_on_ = std::this_thread::get_id();
    cv_.notify_all();
    cv_.wait_for(lk, std::chrono::seconds(30), [&] { return released_; });
  }
  // True once a thread is parked (waits 30 s at most).
  bool wait_parked() {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, std::chrono::seconds(30), [&] { return parked_; });
  }
  bool parked() {
    std::lock_guard lk(mu_);
    return parked_;
  }
  std::thread::id parked_on() {
    std::lock_guard lk(mu_);
    return parked_on_;
  }
  void release() {
    {
      std::lock_guard lk(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool parked_ = false, released_ = false;
  std::thread::id parked_on_;
};

}  // namespace cftest
