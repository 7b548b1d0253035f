// atomic_write_file (atomic_file.h).
#include "atomic_file.h"

#include <cubeforge/error.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace cubeforge::editor {
namespace fs = std::filesystem;

namespace {
[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(what + " " + path + ": " + std::strerror(err));
}
}  // namespace

void atomic_write_file(const std::string& path, const std::string& bytes, const FaultHook& hook) {
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string leaf = ".";  // appended, not "literal" + string (a GCC 12 -Wrestrict false alarm)
  leaf += target.filename().string();
  leaf += ".tmp-";
  leaf += std::to_string(::getpid());
  std::string tmp = (dir / leaf).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write", path, errno);
  auto cleanup_fail = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(what, path, err);
  };
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      cleanup_fail("write failed for", errno);
    }
    off += static_cast<size_t>(n);
  }
  if (hook && !hook("write", path)) cleanup_fail("write failed (injected) for", EIO);
  if (::fsync(fd) != 0) cleanup_fail("fsync failed for", errno);
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
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace cubeforge::editor
