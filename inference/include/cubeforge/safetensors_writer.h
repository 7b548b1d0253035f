// Writes safetensors files (F32, F16 or BF16 storage from fp32 data), atomically: a temporary beside the target,
// then rename. Used by the random test-model generator and the tools; tensors are stored in name order.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cubeforge {

struct TensorToWrite {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

enum class StorageType { F32, F16, BF16 };

void write_safetensors(const std::string& path, const std::map<std::string, TensorToWrite>& tensors,
                       StorageType storage = StorageType::F32, const std::map<std::string, std::string>& metadata = {});

// Writes `contents` to `path` through a temporary file in the same directory and a rename: readers never see a
// partial file, and a failure (full disk, read-only directory) leaves the old file untouched. Throws Error.
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace cubeforge
