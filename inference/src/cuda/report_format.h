// report_line(fmt, ...): printf-style formatting into a std::string, for the lines of the CUDA golden reports.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <string>

namespace cubeforge {

inline std::string report_line(const char* f, ...) __attribute__((format(printf, 1, 2)));
inline std::string report_line(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

}  // namespace cubeforge
