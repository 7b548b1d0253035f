// Round-trip probe (issue 7, session 41): what one cross-SM dependency costs while every SM streams weights, the
// question behind a persistent step kernel (docs/cuda-gpt.md, session 41). One block per SM (one wave), clusters of 2:
//   warp 0, lane 0 of every block: the weight stream, as the fused MLP's producer runs it: S ring slots of 24 KB in
//     shared memory filled by bulk copies (evict_first) from a 2 GiB buffer, each slot re-requested as soon as it has
//     landed (S = 0: no stream). Bytes are counted only while the prober measures.
//   warp 1, lane 0 of block 0 (the prober), after 50 us of warm-up:
//     L2 flag   : ping-pong with block `peer` (another cluster) through two 64-bit words in global memory, relaxed
//                 stores and polls at gpu scope (the engine's tagged words): one row = a store seen by the other SM
//                 and its answer seen back, i.e. two one-way latencies;
//     DSMEM flag: the same with block 1 (rank 1 of its cluster) through words in each other's shared memory
//                 (st / ld .relaxed.cluster.shared::cluster);
//     L2 chase  : a dependent chain of 4-byte loads (ld.global.cg) over 2048 lines of 128 B (256 KB, L2-resident),
//                 timed on its second pass: the latency of an L2 hit under the stream (the LN prologues' loads).
//   warp 2, lane 0 of every block, after the prober: 200 grid-wide barriers (a release add to one counter, then
//     acquire polls until every block has added), timed by block 0: what a persistent kernel pays per phase.
// --quiet: the prober's two clusters (blocks 0, 1, peer, peer + 1) do not stream, so their latencies see only the other
// SMs' traffic in L2 and DRAM, not their own SM's outstanding copies.
// Prints per ring depth: the stream's bandwidth, the medians (and 90th percentiles) of the round trips and barriers,
// the chase's ns per hop, and a device-to-device copy's bandwidth for scale.
// Build (repo root): nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinference/include -Iinference/src
//   -o rt_probe tools/device/rt_probe.cu
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/gpt_device.cuh"

namespace cg = cooperative_groups;
using namespace cubeforge::cuda::detail;

constexpr int SLOT = 24 * 1024, MAXS = 8, ITERS = 2000, BARRIERS = 200, LINES = 2048, LINE_WORDS = 32;
constexpr unsigned long long SPIN = 1ull << 26;  // polls before a side gives up (a peer that never came)

struct Probe {
  const unsigned char* src;
  size_t nchunks;                 // SLOT-byte chunks in src
  int slots;                      // ring depth (0: no stream)
  int quiet;                      // 1: blocks 0, 1, peer and peer + 1 do not stream
  int peer;                       // block of the L2 flag's other side
  unsigned* state;                // 0 warm-up, 1 measuring (flags, chase), 3 measuring (barriers), 2 stop
  unsigned* ctr;                  // the grid barrier's counter
  unsigned long long* l2flag;     // [0] ping, [16] pong (separate 128-byte lines)
  const unsigned* chase;          // LINES x LINE_WORDS words, a cycle through the lines' first words
  unsigned long long* bytes;      // [grid] bytes landed while measuring
  unsigned long long* t_l2;       // [ITERS] round trips, ns
  unsigned long long* t_ds;       // [ITERS]
  unsigned long long* t_bar;      // [BARRIERS] grid barriers, ns (block 0)
  unsigned long long* out;        // [0] window ns, [1] chase ns (LINES hops), [2] chase sink, [3] failures
  unsigned* smids;                // [grid]
};

__device__ __forceinline__ unsigned ld_u32(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void set_state(const Probe& p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p.state), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned cluster_addr(const void* local, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_u32(local)), "r"(rank));
  return r;
}
__device__ __forceinline__ void st_cluster(unsigned addr, unsigned long long v) {
  asm volatile("st.relaxed.cluster.shared::cluster.u64 [%0], %1;" ::"r"(addr), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_cluster(unsigned addr) {
  unsigned long long v;
  asm volatile("ld.relaxed.cluster.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(addr) : "memory");
  return v;
}
// Polls until done() holds; false after SPIN polls.
template <class Done>
__device__ __forceinline__ bool spin_until(Done&& done) {
  for (unsigned long long n = 0; n < SPIN; ++n)
    if (done()) return true;
  return false;
}

__global__ void __launch_bounds__(128, 1) probe_kernel(const Probe p) {
  extern __shared__ __align__(16) unsigned char ring[];
  __shared__ uint64_t full[MAXS];
  __shared__ __align__(8) unsigned long long dsflag;
  cg::cluster_group cluster = cg::this_cluster();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, b = blockIdx.x;
  if (threadIdx.x == 0) {
    dsflag = 0;
    p.smids[b] = smid();
    for (int s = 0; s < p.slots; ++s) mbar_init(&full[s], 1);
    mbar_fence_init();
  }
  cluster.sync();

  const bool streams = p.slots > 0 && !(p.quiet && (b < 2 || b == p.peer || b == p.peer + 1));
  if (warp == 0 && lane == 0 && streams) {  // the stream
    const uint64_t pol = policy_evict_first();
    unsigned long long issued = 0, counted = 0;
    auto issue = [&](int s) {
      const size_t chunk = (issued++ * gridDim.x + b) % p.nchunks;
      mbar_expect_tx(&full[s], SLOT);
      bulk_g2s_hint(ring + (size_t)s * SLOT, p.src + chunk * SLOT, SLOT, &full[s], pol);
    };
    for (int s = 0; s < p.slots; ++s) issue(s);
    RingPos rp;
    for (;; rp.next(p.slots)) {
      mbar_wait(&full[rp.slot], rp.phase);
      const unsigned st = ld_u32(p.state);
      if (st == 2) break;
      if (st == 1) counted += SLOT;
      issue(rp.slot);
    }
    // the copies still in flight land before the block may exit
    for (int k = 1; k < p.slots; ++k) {
      rp.next(p.slots);
      mbar_wait(&full[rp.slot], rp.phase);
    }
    p.bytes[b] = counted;
  } else if (warp == 1 && lane == 0) {
    unsigned long long* ping = p.l2flag;
    unsigned long long* pong = p.l2flag + 16;
    unsigned fails = 0;
    if (b == 0) {
      const unsigned long long t0 = gtimer();
      while (gtimer() - t0 < 50000) {
      }
      const unsigned long long w0 = gtimer();
      set_state(p, 1);
      for (int i = 1; i <= ITERS; ++i) {  // L2 flag
        const unsigned long long t = gtimer();
        st_relaxed_u64(ping, i);
        if (!spin_until([&] { return ld_relaxed_u64(pong) == (unsigned long long)i; })) ++fails;
        p.t_l2[i - 1] = gtimer() - t;
      }
      const unsigned remote = cluster_addr(&dsflag, 1), mine = cluster_addr(&dsflag, 0);
      for (int i = 1; i <= ITERS; ++i) {  // DSMEM flag
        const unsigned long long t = gtimer();
        st_cluster(remote, i);
        if (!spin_until([&] { return ld_cluster(mine) == (unsigned long long)i; })) ++fails;
        p.t_ds[i - 1] = gtimer() - t;
      }
      unsigned idx = 0;  // L2 chase: one pass to warm, one timed
      for (int h = 0; h < LINES; ++h) idx = __ldcg(p.chase + idx);
      const unsigned long long tc = gtimer();
      for (int h = 0; h < LINES; ++h) idx = __ldcg(p.chase + idx);
      p.out[1] = gtimer() - tc;
      p.out[2] = idx;
      p.out[0] = gtimer() - w0;
      set_state(p, 3);
    } else if (b == p.peer) {
      for (int i = 1; i <= ITERS; ++i) {
        if (!spin_until([&] { return ld_relaxed_u64(ping) == (unsigned long long)i; })) ++fails;
        st_relaxed_u64(pong, i);
      }
    } else if (b == 1) {
      const unsigned remote = cluster_addr(&dsflag, 0), mine = cluster_addr(&dsflag, 1);
      for (int i = 1; i <= ITERS; ++i) {
        if (!spin_until([&] { return ld_cluster(mine) == (unsigned long long)i; })) ++fails;
        st_cluster(remote, i);
      }
    }
    if (fails) atomicAdd(p.out + 3, (unsigned long long)fails);
  } else if (warp == 2 && lane == 0) {  // grid barriers, once the prober is done
    unsigned fails = 0;
    while (ld_u32(p.state) != 3) __nanosleep(1000);  // (one poll per us: 132 pollers of one line would load L2)
    for (int i = 1; i <= BARRIERS; ++i) {
      const unsigned long long t = gtimer();
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p.ctr) : "memory");
      const unsigned target = (unsigned)i * gridDim.x;
      if (!spin_until([&] {
            unsigned v;
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p.ctr) : "memory");
            return v >= target;
          }))
        ++fails;
      if (b == 0) p.t_bar[i - 1] = gtimer() - t;
    }
    if (b == 0) set_state(p, 2);
    if (fails) atomicAdd(p.out + 3, (unsigned long long)fails);
  }
  cluster.sync();  // no block leaves while its cluster peer may still write its shared memory
}

static double pct(std::vector<unsigned long long> v, double q) {
  std::sort(v.begin(), v.end());
  return (double)v[std::min(v.size() - 1, (size_t)(q * (double)v.size()))];
}

int main(int argc, char** argv) try {
  std::vector<int> depths;
  int quiet = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quiet") quiet = 1;
    else depths.push_back(std::atoi(argv[i]));
  }
  if (depths.empty()) depths = {0, 1, 2, 3, 4, 5, 6, 8};
  cudaDeviceProp prop;
  CF_CUDA(cudaGetDeviceProperties(&prop, 0));
  const size_t src_bytes = size_t(2) << 30;
  unsigned char* src;
  CF_CUDA(cudaMalloc(&src, src_bytes));
  CF_CUDA(cudaMemset(src, 1, src_bytes));
  std::printf("device: %s, %d SMs; copy %.0f GB/s (read + write of 1 GiB, median of 5)\n", prop.name,
              prop.multiProcessorCount, copy_bandwidth_bytes_per_s() / 1e9);
  std::vector<unsigned> chase(LINES * LINE_WORDS, 0);
  {
    std::vector<unsigned> order(LINES);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin() + 1, order.end(), std::mt19937(41));
    for (int i = 0; i < LINES; ++i) chase[order[i] * LINE_WORDS] = order[(i + 1) % LINES] * LINE_WORDS;
  }
  unsigned *d_chase, *state, *ctr, *smids;
  unsigned long long *flags, *bytes, *t_l2, *t_ds, *t_bar, *out;
  const int maxgrid = prop.multiProcessorCount;
  CF_CUDA(cudaMalloc(&d_chase, chase.size() * 4));
  CF_CUDA(cudaMemcpy(d_chase, chase.data(), chase.size() * 4, cudaMemcpyHostToDevice));
  CF_CUDA(cudaMalloc(&state, 4));
  CF_CUDA(cudaMalloc(&ctr, 4));
  CF_CUDA(cudaMalloc(&t_bar, BARRIERS * 8));
  CF_CUDA(cudaMalloc(&smids, maxgrid * 4));
  CF_CUDA(cudaMalloc(&flags, 32 * 8));
  CF_CUDA(cudaMalloc(&bytes, maxgrid * 8));
  CF_CUDA(cudaMalloc(&t_l2, ITERS * 8));
  CF_CUDA(cudaMalloc(&t_ds, ITERS * 8));
  CF_CUDA(cudaMalloc(&out, 4 * 8));
  const size_t smem = (size_t)MAXS * SLOT;
  CF_CUDA(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(128);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cfg.gridDim = dim3(maxgrid & ~1);
  int clusters = 0;
  CF_CUDA(cudaOccupancyMaxActiveClusters(&clusters, probe_kernel, &cfg));
  const int grid = std::min(maxgrid & ~1, 2 * clusters);  // one wave: every block resident at once
  cfg.gridDim = dim3(grid);
  std::printf("grid %d blocks (clusters of 2, %d resident at once), ring slots of %d KB, %d round trips each%s\n", grid,
              clusters, SLOT / 1024, ITERS, quiet ? "; the prober's SMs do not stream" : "");
  std::printf("%-6s %-12s %-22s %-22s %-14s %-18s\n", "slots", "stream GB/s", "L2 flag RT p50 / p90",
              "DSMEM RT p50 / p90", "L2 chase", "grid barrier p50 / p90");
  for (int S : depths) {
    if (S < 0 || S > MAXS) continue;
    CF_CUDA(cudaMemset(state, 0, 4));
    CF_CUDA(cudaMemset(ctr, 0, 4));
    CF_CUDA(cudaMemset(flags, 0, 32 * 8));
    CF_CUDA(cudaMemset(bytes, 0, maxgrid * 8));
    CF_CUDA(cudaMemset(out, 0, 4 * 8));
    Probe p{src,   src_bytes / SLOT, S,    quiet, grid / 2, state, ctr,  flags,
            d_chase, bytes,          t_l2, t_ds,  t_bar,    out,   smids};
    CF_CUDA(cudaLaunchKernelEx(&cfg, probe_kernel, p));
    CF_CUDA(cudaDeviceSynchronize());
    std::vector<unsigned long long> l2(ITERS), ds(ITERS), bar(BARRIERS), by(grid), o(4);
    CF_CUDA(cudaMemcpy(bar.data(), t_bar, BARRIERS * 8, cudaMemcpyDeviceToHost));
    std::vector<unsigned> sm(grid);
    CF_CUDA(cudaMemcpy(l2.data(), t_l2, ITERS * 8, cudaMemcpyDeviceToHost));
    CF_CUDA(cudaMemcpy(ds.data(), t_ds, ITERS * 8, cudaMemcpyDeviceToHost));
    CF_CUDA(cudaMemcpy(by.data(), bytes, grid * 8, cudaMemcpyDeviceToHost));
    CF_CUDA(cudaMemcpy(o.data(), out, 4 * 8, cudaMemcpyDeviceToHost));
    CF_CUDA(cudaMemcpy(sm.data(), smids, grid * 4, cudaMemcpyDeviceToHost));
    const double total = (double)std::accumulate(by.begin(), by.end(), 0ull);
    std::printf("%-6d %-12.0f %8.0f / %-11.0f %8.0f / %-11.0f %6.0f ns/hop  %7.0f / %-8.0f%s  (SMs %u / %u / %u)\n",
                S, total / (double)o[0], pct(l2, 0.5), pct(l2, 0.9), pct(ds, 0.5), pct(ds, 0.9), (double)o[1] / LINES,
                pct(bar, 0.5), pct(bar, 0.9), o[3] ? "  FAILED POLLS" : "", sm[0], sm[1], sm[grid / 2]);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "rt_probe: %s\n", e.what());
  return 1;
}
