// Owns atomic_write_file and create_parent_folders (atomic_file.h).
#include "fileio/atomic_file.h"

#include <cubeforge/error.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace cubeforge::fileio {
namespace fs = std::filesystem;

namespace {
[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(what + " " + path + ": " + std::strerror(err));
}

// Writes all of bytes to fd; 0, or the errno of the write that failed.
int write_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    off += static_cast<size_t>(n);
  }
  return 0;
}
}  // namespace

void atomic_write_file(const std::string& path, const std::string& bytes, const FaultHook& hook, bool durable) {
  if (path.empty()) throw Error("no output path given");
  // pid + a counter: threads of one process (UI, worker, background writer) never share a temporary
  static std::atomic<unsigned> counter{0};
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string leaf = ".";  // appended, not "literal" + string (a GCC 12 -Wrestrict false alarm)
  leaf += target.filename().string();
  leaf += ".tmp-";
  leaf += std::to_string(::getpid());
  leaf += '-';
  leaf += std::to_string(counter++);
  std::string tmp = (dir / leaf).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write", path, errno);
  auto cleanup_fail = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(what, path, err);
  };
  if (int err = write_all(fd, bytes); err != 0) cleanup_fail("write failed for", err);
  if (hook && !hook("write", path)) cleanup_fail("write failed (injected) for", EIO);
  if (durable && ::fsync(fd) != 0) cleanup_fail("fsync failed for", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("close failed for", path, err);
  }
  if (hook && !hook("rename", path)) {
    ::unlink(tmp.c_str());
    fail("rename failed (injected) for", path, EIO);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("rename failed for", path, err);
  }
  if (!durable) return;
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void append_to_file(const std::string& path, const std::string& bytes, const FaultHook& hook) {
  if (hook && !hook("append", path)) fail("append failed (injected) for", path, EIO);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot append to", path, errno);
  const int err = write_all(fd, bytes);
  ::close(fd);
  if (err != 0) fail("append failed for", path, err);
}

void create_parent_folders(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
}

}  // namespace cubeforge::fileio
