// Owns BackgroundWriter (background_writer.h): one writer thread per instance, a map of pending jobs by path.
#include "fileio/background_writer.h"

#include <exception>
#include <utility>

namespace cubeforge::fileio {

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
    pending_[path] = Job{std::move(bytes), false};
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  work_cv_.notify_one();
}

void BackgroundWriter::append(const std::string& path, const std::string& bytes) {
  {
    std::lock_guard lk(m_);
    auto [it, fresh] = pending_.try_emplace(path);
    if (fresh) it->second.append = true;
    it->second.bytes += bytes;  // a waiting whole write grows by it; waiting appends are joined
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

bool BackgroundWriter::busy() const {
  std::lock_guard lk(m_);
  return !pending_.empty() || writing_;
}

std::map<std::string, std::string> BackgroundWriter::take_failures() {
  std::lock_guard lk(m_);
  return std::exchange(failures_, {});
}

void BackgroundWriter::perform(const std::string& path, const Job& job) const {
  create_parent_folders(path);  // a failure shows in the write
  if (job.append)
    append_to_file(path, job.bytes, hook_);
  else
    atomic_write_file(path, job.bytes, hook_);
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
      perform(node.key(), node.mapped());
    } catch (const std::exception& e) {
      error = e.what();
    }
    lk.lock();
    writing_ = false;
    if (!error.empty()) {
      failed_ = true;
      error_ = error;
      failures_[node.key()] = std::move(error);
    }
    if (pending_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace cubeforge::fileio
