// safetensors reader: mmap + header validation + dtype conversion (see include/cubeforge/safetensors.h).
#include "cubeforge/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "cubeforge/error.h"

namespace cubeforge {

namespace {

struct DTypeEntry {
  const char* name;
  DType type;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {"BOOL", DType::BOOL, 1},       {"U8", DType::U8, 1},           {"I8", DType::I8, 1},
    {"U16", DType::U16, 2},         {"I16", DType::I16, 2},         {"F16", DType::F16, 2},
    {"BF16", DType::BF16, 2},       {"U32", DType::U32, 4},         {"I32", DType::I32, 4},
    {"F32", DType::F32, 4},         {"U64", DType::U64, 8},         {"I64", DType::I64, 8},
    {"F64", DType::F64, 8},         {"F8_E4M3", DType::F8_E4M3, 1}, {"F8_E5M2", DType::F8_E5M2, 1},
    {"F8_E8M0", DType::F8_E8M0, 1}, {"F4", DType::F4, 0},           {"F6_E2M3", DType::F6_E2M3, 0},
    {"F6_E3M2", DType::F6_E3M2, 0}, {"C64", DType::C64, 8},
};

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw Error("safetensors file '" + path + "': " + msg);
}

}  // namespace

const char* dtype_name(DType t) {
  for (const auto& e : kDTypes)
    if (e.type == t) return e.name;
  return "?";
}
size_t dtype_size(DType t) {
  for (const auto& e : kDTypes)
    if (e.type == t) return e.size;
  return 0;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {  // appended, not "literal" + string (a GCC 12 -Wrestrict false alarm)
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafeTensors SafeTensors::open(const std::string& path) {
  SafeTensors st;
  st.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat sb {};
  if (fstat(fd, &sb) != 0) {
    ::close(fd);
    fail(path, "cannot stat");
  }
  const size_t file_size = static_cast<size_t>(sb.st_size);
  if (file_size < 8) {
    ::close(fd);
    fail(path, "truncated: " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  }
  void* base = mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) fail(path, std::string("mmap failed: ") + std::strerror(errno));
  st.mapping_ = std::shared_ptr<void>(base, [file_size](void* p) { munmap(p, file_size); });
  const auto* bytes = static_cast<const uint8_t*>(base);

  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);  // little-endian on every supported host
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len);
  } catch (const std::exception& e) {
    fail(path, std::string("malformed JSON header: ") + e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  const uint8_t* data = bytes + 8 + header_len;
  const size_t data_size = file_size - 8 - header_len;

  std::vector<const TensorInfo*> by_offset;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (!it->is_object()) fail(path, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m)
        if (m->is_string()) st.aliases_[m.key()] = m->get<std::string>();
      continue;
    }
    const auto& e = *it;
    auto bad = [&](const std::string& msg) { fail(path, "tensor '" + name + "': " + msg); };
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      bad("entry needs dtype, shape and data_offsets");
    if (!e["dtype"].is_string()) bad("dtype is not a string");
    TensorInfo ti;
    ti.name = name;
    const std::string dt = e["dtype"].get<std::string>();
    bool found = false;
    for (const auto& d : kDTypes)
      if (dt == d.name) {
        ti.dtype = d.type;
        found = true;
      }
    if (!found) bad("unknown dtype '" + dt + "'");
    if (!e["shape"].is_array()) bad("shape is not an array");
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) bad("shape entries must be non-negative integers");
      ti.shape.push_back(d.get<int64_t>());
    }
    const auto& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad("data_offsets must be two non-negative integers");
    ti.begin = off[0].get<uint64_t>();
    ti.end = off[1].get<uint64_t>();
    if (ti.end < ti.begin) bad("data_offsets end before they begin");
    if (ti.end > data_size)
      bad("data_offsets [" + std::to_string(ti.begin) + "," + std::to_string(ti.end) + ") out of range (data section is " +
          std::to_string(data_size) + " bytes; file truncated?)");
    const size_t esize = dtype_size(ti.dtype);
    if (esize == 0) bad("dtype " + dt + " (sub-byte) is not supported");
    const uint64_t want = static_cast<uint64_t>(ti.numel()) * esize;
    if (want != ti.end - ti.begin)
      bad("byte count " + std::to_string(ti.end - ti.begin) + " does not match dtype " + dt + " and shape " +
          shape_str(ti.shape) + " (" + std::to_string(want) + " bytes)");
    ti.data = data + ti.begin;
    st.tensors_[name] = std::move(ti);
  }
  for (const auto& [n, t] : st.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->begin < by_offset[i - 1]->end && by_offset[i]->end > by_offset[i]->begin)
      fail(path, "tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");
  for (const auto& [alias, target] : st.aliases_)
    if (st.tensors_.count(alias) == 0 && st.tensors_.count(target) == 0 && alias.find('.') != std::string::npos)
      fail(path, "alias '" + alias + "' points at missing tensor '" + target + "'");
  return st;
}

bool SafeTensors::contains(const std::string& name) const {
  if (tensors_.count(name)) return true;
  auto a = aliases_.find(name);
  return a != aliases_.end() && tensors_.count(a->second);
}

const TensorInfo& SafeTensors::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  auto a = aliases_.find(name);
  if (a != aliases_.end()) {
    it = tensors_.find(a->second);
    if (it != tensors_.end()) return it->second;
  }
  fail(path_, "missing tensor '" + name + "'");
}

std::vector<std::string> SafeTensors::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : tensors_) out.push_back(n);
  return out;
}

static void check_shape(const std::string& path, const TensorInfo& ti, const std::string& name,
                        const std::vector<int64_t>& expected) {
  if (!expected.empty() && expected != ti.shape)
    fail(path, "tensor '" + name + "' has shape " + shape_str(ti.shape) + ", expected " + shape_str(expected) +
                   " from the model configuration");
}

std::vector<float> SafeTensors::to_f32(const std::string& name, const std::vector<int64_t>& expected) const {
  const TensorInfo& ti = info(name);
  check_shape(path_, ti, name, expected);
  const size_t n = static_cast<size_t>(ti.numel());
  std::vector<float> out(n);
  switch (ti.dtype) {
    case DType::F32: std::memcpy(out.data(), ti.data, n * 4); break;
    case DType::F64:
      for (size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, ti.data + 8 * i, 8);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, ti.data + 2 * i, 2);
        out[i] = half_to_float(h);
      }
      break;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, ti.data + 2 * i, 2);
        out[i] = bf16_to_float(h);
      }
      break;
    default:
      fail(path_, "tensor '" + name + "' has dtype " + dtype_name(ti.dtype) + ", expected a float type (F32/F16/BF16/F64)");
  }
  return out;
}

std::vector<int64_t> SafeTensors::to_i64(const std::string& name, const std::vector<int64_t>& expected) const {
  const TensorInfo& ti = info(name);
  check_shape(path_, ti, name, expected);
  const size_t n = static_cast<size_t>(ti.numel());
  std::vector<int64_t> out(n);
  auto rd = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, ti.data + sizeof(T) * i, sizeof(T));
      out[i] = static_cast<int64_t>(v);
    }
  };
  switch (ti.dtype) {
    case DType::I64: rd(int64_t{}); break;
    case DType::I32: rd(int32_t{}); break;
    case DType::I16: rd(int16_t{}); break;
    case DType::I8: rd(int8_t{}); break;
    case DType::U8: case DType::BOOL: rd(uint8_t{}); break;
    case DType::U16: rd(uint16_t{}); break;
    case DType::U32: rd(uint32_t{}); break;
    case DType::U64: rd(uint64_t{}); break;
    default: fail(path_, "tensor '" + name + "' has dtype " + dtype_name(ti.dtype) + ", expected an integer type");
  }
  return out;
}

void SafeTensors::check_keys(const std::set<std::string>& expected) const {
  std::vector<std::string> missing, unexpected;
  for (const auto& e : expected)
    if (!contains(e)) missing.push_back(e);
  for (const auto& [n, t] : tensors_) {
    if (expected.count(n)) continue;
    bool aliased = false;  // stored under a name whose alias is expected
    for (const auto& [alias, target] : aliases_)
      if (target == n && expected.count(alias)) aliased = true;
    if (!aliased) unexpected.push_back(n);
  }
  if (missing.empty() && unexpected.empty()) return;
  std::string msg;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 8) s += ", ... (" + std::to_string(v.size()) + " in all)";
    return s;
  };
  if (!missing.empty()) msg += "missing tensors: " + list(missing);
  if (!unexpected.empty()) msg += std::string(msg.empty() ? "" : "; ") + "unexpected tensors: " + list(unexpected);
  fail(path_, msg);
}

}  // namespace cubeforge
