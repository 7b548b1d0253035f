// Strict checkpoint loading into fp32 tensors (see weights.h).
#include "core/weights.h"

#include <set>

#include "cubeforge/error.h"

namespace cubeforge {

WeightStore WeightStore::load(const SafeTensors& file, const TensorSpec& spec) {
  std::set<std::string> names;
  for (const auto& [n, s] : spec) names.insert(n);
  file.check_keys(names);
  return load_subset(file, spec);
}

WeightStore WeightStore::load_subset(const SafeTensors& file, const TensorSpec& spec) {
  WeightStore ws;
  ws.origin_ = file.path();
  for (const auto& [n, s] : spec) ws.tensors_[n] = file.to_f32(n, s);
  return ws;
}

const float* WeightStore::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second.data();
}

const float* WeightStore::get(const std::string& name) const {
  const float* p = find(name);
  if (!p) throw Error("weights '" + origin_ + "': tensor '" + name + "' not loaded");
  return p;
}

std::vector<float>& WeightStore::mutable_tensor(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error("weights '" + origin_ + "': tensor '" + name + "' not loaded");
  return it->second;
}

size_t WeightStore::parameter_count() const {
  size_t n = 0;
  for (const auto& [k, v] : tensors_) n += v.size();
  return n;
}

}  // namespace cubeforge
