// Helpers shared by the inference tests: paths to ../shared, temporary directories and a tiny safetensors writer
// for building good and deliberately broken files.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_paths.h"

namespace cftest {

inline std::string golden_dir() { return shared_dir() + "/golden/cube3d"; }

inline std::filesystem::path temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("cubeforge_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

struct RawTensor {
  std::string dtype = "F32";
  std::vector<int64_t> shape;
  std::string bytes;
};

inline RawTensor f32_tensor(std::vector<int64_t> shape, float fill_start = 0.5f) {
  RawTensor t;
  t.shape = shape;
  int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = fill_start + 0.01f * float(i % 97);
  t.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  return t;
}

// Writes tensors in name order; `mutate_header` may edit the JSON header before it is written.
inline void write_safetensors(const std::string& path, const std::map<std::string, RawTensor>& tensors,
                              const nlohmann::json& metadata = nullptr,
                              const std::function<void(nlohmann::json&)>& mutate_header = {}) {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata.is_null()) h["__metadata__"] = metadata;
  std::string data;
  for (const auto& [name, t] : tensors) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  if (mutate_header) mutate_header(h);
  std::string hs = h.dump();
  uint64_t n = hs.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(hs.data(), hs.size());
  out.write(data.data(), data.size());
}

}  // namespace cftest
