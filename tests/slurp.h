// Test helper: a file's whole content as a string ("" when it cannot be read).
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cftest {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace cftest
