// Loads a checkpoint strictly against the tensor list a model derives from its configuration: every expected tensor
// present with the expected shape, nothing unexpected, everything converted to fp32 (F32/F16/BF16 accepted).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cubeforge/safetensors.h"

namespace cubeforge {

using TensorSpec = std::map<std::string, std::vector<int64_t>>;

class WeightStore {
 public:
  WeightStore() = default;
  // Strict load: throws cubeforge::Error naming the file and tensor on a missing/unexpected tensor or a wrong shape.
  static WeightStore load(const SafeTensors& file, const TensorSpec& spec);
  // Loads the tensors of spec (shapes checked) without the strict key check: for files known to carry extras.
  static WeightStore load_subset(const SafeTensors& file, const TensorSpec& spec);

  const float* get(const std::string& name) const;   // throws when absent
  const float* find(const std::string& name) const;  // nullptr when absent
  std::vector<float>& mutable_tensor(const std::string& name);
  size_t parameter_count() const;

 private:
  std::string origin_;
  std::map<std::string, std::vector<float>> tensors_;
};

}  // namespace cubeforge
