// FastDiv: division and remainder of small non-negative integers by a divisor known only at run time (a launch's row
// count), by one high multiply instead of the multi-instruction sequence of an integer division. Host and device.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define CF_HD __host__ __device__ __forceinline__
#else
#define CF_HD inline
#endif

namespace cubeforge::cuda {

// n / d = high 32 bits of n m, with m = ceil(2^32 / d) (0 stands for d = 1): exact for n, d < 2^16, since
// n = q d + r gives n m / 2^32 = q + (r + n e / 2^32) / d with e = m d - 2^32 < d, and n e < 2^32.
struct FastDiv {
  unsigned d = 1, m = 0;
  FastDiv() = default;
  CF_HD explicit FastDiv(unsigned divisor) : d(divisor), m(divisor > 1 ? 0xFFFFFFFFu / divisor + 1u : 0u) {}
  CF_HD unsigned div(unsigned n) const {
    if (d == 1) return n;
#if defined(__CUDA_ARCH__)
    return __umulhi(n, m);
#else
    return (unsigned)(((uint64_t)n * m) >> 32);
#endif
  }
  CF_HD unsigned mod(unsigned n) const { return n - div(n) * d; }
};

}  // namespace cubeforge::cuda

#undef CF_HD
