// Host helpers shared by the standalone device probes (rt_probe.cu, persist_proto.cu): the device-to-device copy
// bandwidth they print for scale.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/cuda_common.cuh"

// Device-to-device copy of 1 GiB, bytes read + written per second in GB/s, median of 5 (allocates and frees 2 GiB).
inline double copy_bandwidth_gbs() {
  using namespace cubeforge::cuda::detail;
  unsigned char* buf;
  const size_t half = size_t(1) << 30;
  CF_CUDA(cudaMalloc(&buf, 2 * half));
  cudaEvent_t a, z;
  CF_CUDA(cudaEventCreate(&a));
  CF_CUDA(cudaEventCreate(&z));
  std::vector<float> ms;
  for (int r = 0; r < 5; ++r) {
    CF_CUDA(cudaEventRecord(a));
    CF_CUDA(cudaMemcpyAsync(buf + half, buf, half, cudaMemcpyDeviceToDevice));
    CF_CUDA(cudaEventRecord(z));
    CF_CUDA(cudaEventSynchronize(z));
    float t;
    CF_CUDA(cudaEventElapsedTime(&t, a, z));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CF_CUDA(cudaEventDestroy(a));
  CF_CUDA(cudaEventDestroy(z));
  CF_CUDA(cudaFree(buf));
  return 2.0 * (double)half / ((double)ms[2] * 1e6);
}
