// Data-driven golden checks against reference outputs in the ../shared/golden/cube3d format: for a case NAME in
// DIR (NAME_config.json, NAME_gpt/shape/clip.safetensors, NAME_io.safetensors) run every stage this library
// implements on the case's inputs and compare every output tensor it can produce.
#pragma once
#include <string>
#include <vector>

namespace cubeforge {

struct GoldenLine {
  std::string tensor;
  double rel_err = 0;     // ‖out − ref‖ / ‖ref‖ (0 for exact-match checks that pass)
  bool ok = false;
  std::string note;       // e.g. "tokens match", "first mismatch at 7"
};

struct GoldenReport {
  std::string name;
  std::vector<GoldenLine> lines;
  bool tokens_match = false;
  double max_rel_err = 0;
  bool ok() const;
};

constexpr double kGoldenTolerance = 1e-4;

// Throws cubeforge::Error when the case's files are missing or malformed.
GoldenReport run_golden(const std::string& dir, const std::string& name);

double relative_l2(const float* out, const float* ref, size_t n);

}  // namespace cubeforge
