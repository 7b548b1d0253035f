// Comma (or other) separated list arguments of the CLI commands ("--rb 7,8,9", "--configs a,b").
#pragma once
#include <sstream>
#include <string>
#include <vector>

namespace cubeforge::cli {

// The non-empty items of s between separators.
inline std::vector<std::string> split_list(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, sep);)
    if (!t.empty()) out.push_back(t);
  return out;
}

}  // namespace cubeforge::cli
