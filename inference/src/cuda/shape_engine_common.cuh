// What every file of the CUDA shape engine uses on the host side: the launch check, DeviceOom (the allocation
// failure on which callers fall back to smaller chunks or the host), the host clock, launch and size arithmetic, and
// DevBuf, the grow-only device buffer.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cubeforge/error.h"
#include "cuda_common.cuh"

#define CF_CHECK_LAUNCH() CF_CUDA(cudaGetLastError())

namespace cubeforge::cuda::shape_detail {

// Allocation failure on the device (the callers fall back to smaller chunks or a host grid).
class DeviceOom : public Error {
 public:
  using Error::Error;
};

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline unsigned blocks_for(size_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }
inline size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

// Grow-only device buffer.
struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  size_t* total = nullptr;
  void ensure(size_t b) {
    if (b <= bytes) return;
    release();
    void* q = nullptr;
    const size_t want = std::max<size_t>(round_up(b, 256), 256);
    const cudaError_t e = cudaMalloc(&q, want);
    if (e != cudaSuccess) {
      cudaGetLastError();
      size_t fr = 0, tot = 0;
      cudaMemGetInfo(&fr, &tot);
      throw DeviceOom("CUDA shape: cannot allocate " + std::to_string(want >> 20) + " MiB on the device (" +
                      std::to_string(fr >> 20) + " MiB free of " + std::to_string(tot >> 20) + ")");
    }
    p = q;
    bytes = want;
    if (total) *total += bytes;
  }
  void release() {
    if (p) {
      cudaFree(p);
      if (total) *total -= bytes;
    }
    p = nullptr;
    bytes = 0;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

}  // namespace cubeforge::cuda::shape_detail
