// BackgroundWriter: one writer thread per instance, a map of pending contents by path.
#include "background_writer.h"

#include <exception>
#include <filesystem>
#include <utility>

namespace cubeforge::editor {

BackgroundWriter::~BackgroundWriter() {
  {
    std::lock_guard lk(m_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();  // run() drains what is pending before it returns
}

void BackgroundWriter::write(const std::string& path, std::string bytes) {
  {
    std::lock_guard lk(m_);
    pending_[path] = std::move(bytes);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  work_cv_.notify_one();
}

bool BackgroundWriter::flush() {
  std::unique_lock lk(m_);
  idle_cv_.wait(lk, [&] { return pending_.empty() && !writing_; });
  const bool ok = !failed_;
  failed_ = false;
  return ok;
}

std::string BackgroundWriter::last_error() const {
  std::lock_guard lk(m_);
  return error_;
}

void BackgroundWriter::run() {
  std::unique_lock lk(m_);
  for (;;) {
    work_cv_.wait(lk, [&] { return stop_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stop_ and nothing left
    auto node = pending_.extract(pending_.begin());
    writing_ = true;
    lk.unlock();
    std::string error;
    try {
      const std::filesystem::path parent = std::filesystem::path(node.key()).parent_path();
      std::error_code ec;
      if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows in the write
      atomic_write_file(node.key(), node.mapped(), hook_);
    } catch (const std::exception& e) {
      error = e.what();
    }
    lk.lock();
    writing_ = false;
    if (!error.empty()) {
      failed_ = true;
      error_ = std::move(error);
    }
    if (pending_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace cubeforge::editor
