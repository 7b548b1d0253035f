// Paths every test needs (../shared goldens, the source tree, build/bin): the environment first (ctest sets
// CUBEFORGE_SHARED_DIR etc.), else the values CMake compiled in (tests/CMakeLists.txt).
#pragma once
#include <cstdlib>
#include <string>

namespace cftest {

inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
#ifdef CUBEFORGE_TEST_SHARED_DIR
inline std::string shared_dir() { return env_or("CUBEFORGE_SHARED_DIR", CUBEFORGE_TEST_SHARED_DIR); }
inline std::string source_dir() { return env_or("CUBEFORGE_SOURCE_DIR", CUBEFORGE_TEST_SOURCE_DIR); }
inline std::string bin_dir() { return env_or("CUBEFORGE_BIN_DIR", CUBEFORGE_TEST_BIN_DIR); }
#else
inline std::string shared_dir() { return env_or("CUBEFORGE_SHARED_DIR", "../shared"); }
inline std::string source_dir() { return env_or("CUBEFORGE_SOURCE_DIR", "."); }
inline std::string bin_dir() { return env_or("CUBEFORGE_BIN_DIR", "bin"); }
#endif

}  // namespace cftest
