// The random number of one top-p draw, keyed by (seed, step): one formula for the CPU path (sampling.cpp) and both
// CUDA kernel sets (gpt_topp.cuh, gpt_generic_kernels.cuh), so that variation v (seed + v) draws the same number at
// a step on every path and is the single generation of that seed. Host and device code (nvcc sees __host__
// __device__).
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define CF_TOPP_HD __host__ __device__ __forceinline__
#else
#define CF_TOPP_HD inline
#endif

namespace cubeforge::topp {

CF_TOPP_HD uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// 64 random bits for the draw of token `step` (>= 0) with `seed`.
CF_TOPP_HD uint64_t draw_bits(uint64_t seed, int step) {
  return splitmix64(seed ^ splitmix64(static_cast<uint64_t>(static_cast<unsigned>(step)) + 0x51ed2701ULL));
}

}  // namespace cubeforge::topp

#undef CF_TOPP_HD
