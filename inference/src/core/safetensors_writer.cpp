// safetensors writer and atomic file replacement (see include/cubeforge/safetensors_writer.h).
#include "cubeforge/safetensors_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "cubeforge/error.h"

namespace cubeforge {

namespace {
uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return uint16_t(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return uint16_t(h);
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string leaf = ".";  // appended, not "literal" + string (a GCC 12 -Wrestrict false alarm)
  leaf += target.filename().string();
  leaf += ".tmp-XXXXXX";
  const std::string tmp = (dir / leaf).string();
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) throw Error("cannot write '" + path + "': " + std::strerror(errno));
  size_t off = 0;
  while (off < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + off, contents.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(name.data());
      throw Error("cannot write '" + path + "': " + why);
    }
    off += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(name.data());
    throw Error("cannot write '" + path + "': " + why);
  }
  ::chmod(name.data(), 0644);
  if (std::rename(name.data(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(name.data());
    throw Error("cannot write '" + path + "': " + why);
  }
}

void write_safetensors(const std::string& path, const std::map<std::string, TensorToWrite>& tensors, StorageType storage,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  const size_t esize = storage == StorageType::F32 ? 4 : 2;
  const char* dtype = storage == StorageType::F32 ? "F32" : storage == StorageType::F16 ? "F16" : "BF16";
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    size_t n = 1;
    for (auto d : t.shape) n *= size_t(d);
    if (n != t.data.size())
      throw Error("write_safetensors '" + path + "': tensor '" + name + "' has " + std::to_string(t.data.size()) +
                  " values for its shape");
    h[name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + n * esize}}};
    offset += n * esize;
  }
  std::string header = h.dump();
  while ((header.size() + 8) % 8) header += ' ';  // align the data section
  std::string out;
  out.reserve(8 + header.size() + offset);
  const uint64_t hl = header.size();
  out.append(reinterpret_cast<const char*>(&hl), 8);
  out += header;
  for (const auto& [name, t] : tensors) {
    if (storage == StorageType::F32) {
      out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * 4);
    } else {
      for (float v : t.data) {
        const uint16_t b = storage == StorageType::F16 ? float_to_half(v) : float_to_bf16(v);
        out.append(reinterpret_cast<const char*>(&b), 2);
      }
    }
  }
  write_file_atomic(path, out);
}

}  // namespace cubeforge
