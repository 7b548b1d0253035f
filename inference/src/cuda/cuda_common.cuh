// Shared helpers of the CUDA GPT backend: error checks, bf16 rounding, PDL launch helper, inline PTX.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cubeforge/error.h"

namespace cubeforge::cuda::detail {

typedef __nv_bfloat16 bf16;

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  throw cubeforge::Error(std::string("CUDA error in ") + what + " (" + file + ":" + std::to_string(line) +
                         "): " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

#define CF_CUDA(call)                                                                      \
  do {                                                                                     \
    cudaError_t cf_e_ = (call);                                                            \
    if (cf_e_ != cudaSuccess) ::cubeforge::cuda::detail::throw_cuda(cf_e_, #call, __FILE__, __LINE__); \
  } while (0)

// The device allocations of one engine: alloc() fails with the engine's name, the size asked for and the GPU's free
// memory ("the GPU is too small or busy"); bytes() is their total (at least 16 bytes each); all are freed with it.
class DeviceAllocations {
 public:
  explicit DeviceAllocations(const char* owner) : owner_(owner) {}
  ~DeviceAllocations() {
    for (void* p : ptrs_) cudaFree(p);
  }
  DeviceAllocations(const DeviceAllocations&) = delete;
  DeviceAllocations& operator=(const DeviceAllocations&) = delete;

  template <typename T>
  T* alloc(size_t count) {
    void* p = nullptr;
    const size_t bytes = std::max<size_t>(count * sizeof(T), 16);
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      size_t fr = 0, tot = 0;
      cudaMemGetInfo(&fr, &tot);
      throw cubeforge::Error(std::string(owner_) + ": cannot allocate " + std::to_string(bytes >> 20) +
                             " MiB on the GPU (" + std::to_string(fr >> 20) + " MiB free of " +
                             std::to_string(tot >> 20) + " MiB): the GPU is too small or busy");
    }
    ptrs_.push_back(p);
    bytes_ += bytes;
    return static_cast<T*>(p);
  }
  size_t bytes() const { return bytes_; }

 private:
  const char* owner_;
  std::vector<void*> ptrs_;
  size_t bytes_ = 0;
};

// Shared-memory carveout of the GPT decode kernels (sessions 45-46; docs/cuda-gpt.md), CUBEFORGE_GPT_CARVEOUT:
// - unset (the default) = "one": the one-prompt qkv, attention and MLP kernels prefer the largest carveout. Session
//   46 on an H100: one prompt -1.9% / -1.6% (v0.5 / v0.1), 4 prompts unchanged; left to the driver the split depends
//   on what ran on the SMs before (a shape stage's kernels slowed the next decode by ~0.7%);
// - "driver" (any word that names no group): no preference, the driver's split (the default before session 46);
// - 0..100: that preference (percent of the maximum; the driver still takes what a kernel needs) for every kernel
//   launched through launch(), set once before its first launch (carveout_knob). 100 costs 4 prompts 1.6% (the
//   multi-row attention wants L1);
// - a comma list of kernel groups that prefer the largest carveout (carveout_group; the engine sets them,
//   gpt_engine_upload.cuh): qkv1, attn1, mlp1 (the one-prompt kernels), qkv8, attn8, mlp8 (the multi-row ones),
//   oproj and lm (both); "one" = qkv1,attn1,mlp1. At 4 prompts only attn8 changes anything (+1.6%).
constexpr int kCarveoutDriver = -1;
inline const std::string& carveout_env() {
  static const std::string v = [] {
    const char* e = std::getenv("CUBEFORGE_GPT_CARVEOUT");
    return std::string(e && *e ? e : "one");
  }();
  return v;
}
inline int carveout_knob() {
  static const int v = [] {
    const std::string& e = carveout_env();
    if (e[0] < '0' || e[0] > '9') return kCarveoutDriver;  // never empty: unset reads "one"
    return std::clamp(std::atoi(e.c_str()), 0, 100);
  }();
  return v;
}
inline bool carveout_group(const std::string& group) {
  const std::string& e = carveout_env();
  if (carveout_knob() >= 0) return false;  // a percentage for every kernel
  size_t i = 0;
  while (i <= e.size()) {
    const size_t j = std::min(e.find(',', i), e.size());
    const std::string tok = e.substr(i, j - i);
    if (tok == group || (tok == "one" && (group == "qkv1" || group == "attn1" || group == "mlp1"))) return true;
    i = j + 1;
  }
  return false;
}
inline void apply_carveout_once(const void* kernel) {
  static std::mutex mu;
  static std::set<const void*> done;
  std::lock_guard<std::mutex> lock(mu);
  if (!done.insert(kernel).second) return;
  CF_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout_knob()));
}

// Launch with (optionally) programmatic dependent launch: the kernel may start while its predecessor in the
// stream still runs; it must call pdl_wait() before reading anything the predecessor writes.
template <typename... KArgs, typename... Args>
inline void launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool pdl,
                   Args&&... args) {
  if (carveout_knob() >= 0) apply_carveout_once(reinterpret_cast<const void*>(kernel));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  CF_CUDA(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

// ---- device helpers -------------------------------------------------------------------------------------------
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Streaming 16-byte weight load: read-only path, no L1 allocation (weights are read once per step).
__device__ __forceinline__ uint4 ld_weight(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}
// 16-byte global -> shared copy that does not hold a register while in flight (cp.async, L2 only), and its fences.
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Activations written by earlier kernels: L2 only (never a stale L1 line).
__device__ __forceinline__ uint4 ld_cg16(const void* p) { return __ldcg(reinterpret_cast<const uint4*>(p)); }
__device__ __forceinline__ float4 ld_cg_f4(const float* p) { return __ldcg(reinterpret_cast<const float4*>(p)); }

__device__ __forceinline__ float bf(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float round_bf(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
__device__ __forceinline__ float bf_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }
__device__ __forceinline__ uint32_t pack_bf2(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x = lo (low 16 bits), .y = hi
  return *reinterpret_cast<uint32_t*>(&h);
}

// D += A(16x16, row) * B(16x8, col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Device-to-device copy bandwidth, bytes read + written per second: `reps` copies of `bytes` back and forth between two
// buffers after two warm-up copies, timed together with events. The scale the bench's "% of copy" and the standalone
// device probes (tools/device/) print. Throws if the two buffers do not fit.
inline double copy_bandwidth_bytes_per_s(size_t bytes = size_t(1) << 31, int reps = 10) {
  void *a = nullptr, *b = nullptr;
  CF_CUDA(cudaMalloc(&a, bytes));
  if (cudaMalloc(&b, bytes) != cudaSuccess) {
    cudaFree(a);
    throw cubeforge::Error("copy bandwidth: out of device memory");
  }
  cudaMemset(a, 0x5a, bytes);
  cudaMemset(b, 0x33, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < 2; ++i) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
  cudaEventRecord(e0, 0);
  for (int i = 0; i < reps; ++i) cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0);
  cudaEventRecord(e1, 0);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  CF_CUDA(cudaGetLastError());
  return 2.0 * (double)bytes * reps / (ms * 1e-3);
}

}  // namespace cubeforge::cuda::detail
