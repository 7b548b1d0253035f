// Load probe (issue 7, session 10): how fast 264 blocks (2 per SM) pull a 37.7 MB weight matrix (gate/up's size)
// from DRAM in one round, by load mechanism, with nothing else running. Each block reads its own contiguous
// 144 KB; launches rotate through a 1 GiB buffer so every launch reads from DRAM (L2 is 60 MB).
//   regs   : 36 16-byte loads per thread into registers (ld.global.nc), all issued before use
//   mixed  : 24 into registers + 12 cp.async into shared memory (the one-round gate/up kernel's split)
//   async  : 24 cp.async (16 B) per thread into shared memory (96 KB per block)
//   bulk   : cp.async.bulk (TMA) of 48 KB chunks into shared memory, one thread, mbarrier wait (192 KB on one
//            block per SM, or 96 KB on two)
// Prints the median time per launch over 50 launches (CUDA events around each launch) and the bandwidth. Launches
// start 56 MB apart (more than the largest launch reads), so no launch reads what the one before it left in L2.
// Build (repo root): nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinference/include -Iinference/src
//   -o load_probe tools/device/load_probe.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda/cuda_common.cuh"

constexpr int NTHR = 256;

using cubeforge::cuda::detail::ld_weight;  // the decode GEMVs' streaming weight load

// NREG register loads + NSM cp.async per thread; a warp's 16-byte loads cover 512 contiguous bytes.
template <int NREG, int NSM>
__global__ void __launch_bounds__(NTHR, 2) probe(const uint4* buf, size_t block_elems, unsigned* sink) {
  extern __shared__ uint4 sm[];
  const uint4* base = buf + (size_t)blockIdx.x * block_elems;
  uint4 r[NREG > 0 ? NREG : 1];
#pragma unroll
  for (int i = 0; i < NREG; ++i) r[i] = ld_weight(base + (size_t)i * NTHR + threadIdx.x);
#pragma unroll
  for (int i = 0; i < NSM; ++i) {
    const uint4* src = base + (size_t)(NREG + i) * NTHR + threadIdx.x;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(sm + i * NTHR + threadIdx.x)),
                 "l"(src) : "memory");
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;" ::: "memory");
  unsigned x = 0;
#pragma unroll
  for (int i = 0; i < NREG; ++i) x ^= r[i].x ^ r[i].w;
#pragma unroll
  for (int i = 0; i < NSM; ++i) x ^= sm[i * NTHR + threadIdx.x].y;
  if (x == 0x12345678u) sink[0] = x;
}

// Bulk: thread 0 issues NCH copies of CH bytes (TMA) into shared memory on one mbarrier, everyone waits.
__global__ void __launch_bounds__(NTHR, 1) probe_bulk(const unsigned char* buf, size_t block_bytes, int nch, unsigned ch,
                                                       unsigned* sink) {
  extern __shared__ __align__(128) unsigned char smb[];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned bar_s = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar_s));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const unsigned char* base = buf + (size_t)blockIdx.x * block_bytes;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(bar_s), "r"((unsigned)(nch * ch)) : "memory");
    for (int c = 0; c < nch; ++c)
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       (unsigned)__cvta_generic_to_shared(smb + (size_t)c * ch)),
                   "l"(base + (size_t)c * ch), "r"(ch), "r"(bar_s)
                   : "memory");
  }
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar_s) : "memory");
  const unsigned x = reinterpret_cast<const unsigned*>(smb)[threadIdx.x];
  if (x == 0x12345678u) sink[0] = x;
}

template <class L>
double median_us(cudaStream_t s, L&& launch, int reps = 50) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < reps + 3; ++i) {
    cudaEventRecord(a, s);
    launch(i);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (i >= 3) t.push_back(ms * 1000.f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() try {
  const size_t total = 1ull << 30;
  unsigned char* buf = nullptr;
  unsigned* sink = nullptr;
  CF_CUDA(cudaMalloc(&buf, total + (64 << 20)));
  CF_CUDA(cudaMalloc(&sink, 4));
  CF_CUDA(cudaMemset(buf, 1, total + (64 << 20)));
  cudaStream_t s;
  CF_CUDA(cudaStreamCreate(&s));
  int nsm = 0;
  CF_CUDA(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
  const size_t per_launch = (size_t)37748736;  // gate/up: 12288 x 1536 bf16 (the copy's size)
  const size_t stride = (size_t)56 << 20;       // > the largest launch (51.9 MB): 18 start points over 1 GiB
  auto offset = [&](int i) { return (size_t)(i % 18) * stride; };
  // empty launch for the launch + event overhead
  const double t0 = median_us(s, [&](int) { probe<0, 0><<<2 * nsm, NTHR, 0, s>>>((const uint4*)buf, 0, sink); });
  std::printf("empty launch (%d blocks): %.2f us\n", 2 * nsm, t0);
  auto run = [&](const char* name, auto kern, int blocks, size_t smem, size_t bytes_per_block) {
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    const double t = median_us(s, [&](int i) {
      kern<<<blocks, NTHR, smem, s>>>((const uint4*)(buf + offset(i)), bytes_per_block / 16, sink);
    });
    const double bytes = (double)blocks * bytes_per_block;
    std::printf("%-44s %4d blocks x %6.1f KB = %5.1f MB: %7.2f us (%.2f TB/s; minus empty %.2f TB/s)\n", name, blocks,
                bytes_per_block / 1024.0, bytes / 1e6, t, bytes / t / 1e6, bytes / (t - t0) / 1e6);
    return cudaGetLastError();
  };
  const int B2 = 2 * nsm;  // 264 blocks; 36 loads x 256 threads x 16 B = 144 KB per block = 38.9 MB
  CF_CUDA(run("regs: 36 x 16 B per thread", probe<36, 0>, B2, 0, 36 * 4096));
  CF_CUDA(run("mixed: 24 regs + 12 cp.async (gate/up split)", probe<24, 12>, B2, 12 * 4096, 36 * 4096));
  CF_CUDA(run("regs: 24 x 16 B per thread (96 KB)", probe<24, 0>, B2, 0, 24 * 4096));
  CF_CUDA(run("cp.async: 24 x 16 B per thread (96 KB smem)", probe<0, 24>, B2, 24 * 4096, 24 * 4096));
  CF_CUDA(run("regs: 12 x 16 B, 4 waves of blocks", probe<12, 0>, 4 * B2, 0, 12 * 4096));
  // bulk: one block per SM, 4 x 48 KB = 192 KB, and 2 blocks per SM x 2 x 48 KB
  for (int cfg = 0; cfg < 2; ++cfg) {
    const int blocks = cfg == 0 ? nsm : B2, nch = cfg == 0 ? 4 : 2;
    const unsigned ch = 48 * 1024;
    const size_t smem = (size_t)nch * ch;
    CF_CUDA(cudaFuncSetAttribute(probe_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const double t = median_us(s, [&](int i) {
      probe_bulk<<<blocks, NTHR, smem, s>>>(buf + offset(i), (size_t)nch * ch, nch, ch, sink);
    });
    const double bytes = (double)blocks * nch * ch;
    std::printf("bulk: %d x 48 KB per block (TMA)                %4d blocks = %5.1f MB: %7.2f us (%.2f TB/s; minus empty %.2f TB/s)\n",
                nch, blocks, bytes / 1e6, t, bytes / t / 1e6, bytes / (t - t0) / 1e6);
    CF_CUDA(cudaGetLastError());
  }
  // device-to-device copy of the same size for reference
  const double tc = median_us(s, [&](int i) {
    cudaMemcpyAsync(buf + offset(i + 1), buf + (offset(i) + (512ull << 20)) % (total - per_launch), per_launch,
                    cudaMemcpyDeviceToDevice, s);
  });
  std::printf("cudaMemcpy D2D %.1f MB: %.2f us (%.2f TB/s read+write)\n", per_launch / 1e6, tc, 2.0 * per_launch / tc / 1e6);
  return 0;
} catch (const std::exception& e) {
  std::printf("%s\n", e.what());
  return 1;
}
