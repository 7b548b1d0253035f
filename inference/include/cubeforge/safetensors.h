// Memory-mapped safetensors reader. Validates the whole header at open (length, JSON, dtypes, shapes, byte counts,
// offsets in range and non-overlapping) and honours the alias metadata that shared tensors produce
// (__metadata__ = {alias: stored_name}). Every error names the file and, where it applies, the tensor.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace cubeforge {

enum class DType { BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2, F8_E8M0, F4, F6_E2M3, F6_E3M2, C64 };

const char* dtype_name(DType t);
size_t dtype_size(DType t);  // bytes per element (0 for sub-byte types, which are rejected)

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte offsets relative to the data section
  const uint8_t* data = nullptr;
  int64_t numel() const;
};

std::string shape_str(const std::vector<int64_t>& shape);

class SafeTensors {
 public:
  static SafeTensors open(const std::string& path);
  SafeTensors() = default;

  const std::string& path() const { return path_; }
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;  // resolves aliases; throws when missing
  std::vector<std::string> names() const;                 // stored names (aliases not included)
  const std::map<std::string, std::string>& aliases() const { return aliases_; }

  // Converts F32/F16/BF16/F64 to fp32. When `expected` is non-empty the shape must match exactly.
  std::vector<float> to_f32(const std::string& name, const std::vector<int64_t>& expected = {}) const;
  // Converts any integer dtype to int64.
  std::vector<int64_t> to_i64(const std::string& name, const std::vector<int64_t>& expected = {}) const;

  // Strict key check (like load_state_dict strict=True): reports missing and unexpected tensors together.
  // Aliases of expected names count as present.
  void check_keys(const std::set<std::string>& expected) const;

 private:
  std::string path_;
  std::shared_ptr<void> mapping_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace cubeforge
