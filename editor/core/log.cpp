// Output log implementation.
#include "log.h"

#include <cstdio>

namespace cubeforge::editor {

void Log::add(LogLevel level, std::string text) {
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::lock_guard lock(mu_);
  if (echo_) {
    const char* tag = level == LogLevel::Error ? "error" : level == LogLevel::Warning ? "warning" : "info";
    std::fprintf(stderr, "[cubeforge %s] %s\n", tag, text.c_str());
  }
  if (level == LogLevel::Error) ++errors_;
  ++total_;
  lines_.push_back({level, std::move(text), t});
  if (lines_.size() > limit_) lines_.erase(lines_.begin(), lines_.begin() + static_cast<std::ptrdiff_t>(limit_ / 5));
}

std::vector<LogLine> Log::snapshot() const {
  std::lock_guard lock(mu_);
  return lines_;
}

size_t Log::total() const {
  std::lock_guard lock(mu_);
  return total_;
}

size_t Log::error_count() const {
  std::lock_guard lock(mu_);
  return errors_;
}

void Log::clear() {
  std::lock_guard lock(mu_);
  lines_.clear();
}

}  // namespace cubeforge::editor
