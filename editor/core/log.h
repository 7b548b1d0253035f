// The Output log: thread-safe, bounded list of messages shown in the Output panel and mirrored to stderr.
#pragma once
#include <cubeforge/editor/types.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace cubeforge::editor {

struct LogLine {
  LogLevel level;
  std::string text;
  double time_s;  // seconds since the log was created
};

class Log {
 public:
  explicit Log(bool echo_stderr = true, size_t limit = 5000) : echo_(echo_stderr), limit_(limit) {}
  void add(LogLevel level, std::string text);
  void info(std::string t) { add(LogLevel::Info, std::move(t)); }
  void warn(std::string t) { add(LogLevel::Warning, std::move(t)); }
  void error(std::string t) { add(LogLevel::Error, std::move(t)); }
  // Copies lines with index >= from (indices grow forever; older lines may have been dropped).
  std::vector<LogLine> snapshot() const;
  size_t total() const;
  size_t error_count() const;
  void clear();
  void set_echo(bool e) { echo_ = e; }

 private:
  mutable std::mutex mu_;
  bool echo_;
  size_t limit_;
  std::vector<LogLine> lines_;
  size_t total_ = 0, errors_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace cubeforge::editor
