// Autosaver: one write thread at a time, joined before the next starts or at destruction.
#include "autosaver.h"

#include "document.h"

#include <exception>
#include <utility>

namespace cubeforge::editor {

Autosaver::~Autosaver() { wait(); }

bool Autosaver::start(Scene scene, std::string original, uint64_t counter) {
  std::lock_guard lk(m_);
  if (running_) return false;
  if (thread_.joinable()) thread_.join();  // the previous write has finished (running_ is false)
  running_ = true;
  finished_ = false;
  counter_ = counter;
  thread_ = std::thread([this, scene = std::move(scene), original = std::move(original)] {
    std::string error;
    try {
      Document::write_recovery_of(scene, original, hook_);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
    std::lock_guard lk2(m_);
    error_ = std::move(error);
    running_ = false;
    finished_ = true;
    done_cv_.notify_all();
  });
  return true;
}

bool Autosaver::busy() const {
  std::lock_guard lk(m_);
  return running_;
}

std::optional<Autosaver::Finished> Autosaver::take_finished() {
  std::lock_guard lk(m_);
  if (!finished_) return std::nullopt;
  finished_ = false;
  return Finished{counter_, error_};
}

void Autosaver::wait() {
  std::unique_lock lk(m_);
  done_cv_.wait(lk, [&] { return !running_; });
  if (thread_.joinable()) {
    std::thread t = std::move(thread_);
    lk.unlock();
    t.join();
  }
}

}  // namespace cubeforge::editor
