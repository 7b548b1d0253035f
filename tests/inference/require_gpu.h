// CF_REQUIRE_GPU(): skips a GoogleTest with the reason unless a CUDA build finds a usable GPU.
#pragma once
#include <gtest/gtest.h>

#include <string>

#ifdef CUBEFORGE_HAVE_CUDA
#include "cubeforge/cuda_gpt.h"
#define CF_REQUIRE_GPU()                                                                    \
  do {                                                                                      \
    std::string why_;                                                                       \
    if (!cubeforge::cuda::cuda_available(&why_)) GTEST_SKIP() << "no usable GPU: " << why_; \
  } while (0)
#else
#define CF_REQUIRE_GPU() GTEST_SKIP() << "this build has no CUDA backend (CUBEFORGE_HAVE_CUDA unset)"
#endif
