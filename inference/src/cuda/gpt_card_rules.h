// Owns the CUDA decode's per-card defaults: the few settings whose best value was measured to differ between the
// H200 and the H100, chosen from the memory's peak bandwidth (the one property that separates them here). Host-only
// constexpr rules, tested on the host (tests/inference/test_card_rules.cpp); the engine applies them at load and
// prints what it chose. Every rule keeps the H200's measured setting where the bandwidth is unknown.
#pragma once

namespace cubeforge::cuda::detail {

// The memory's peak bandwidth in bytes/s from the device's memory clock (kHz) and bus width (bits), two transfers per
// clock: H100 SXM 2619 MHz x 5120 bits = 3.35e12, H200 3201 MHz x 6144 bits = 4.92e12; 0 where either is unknown.
constexpr double peak_memory_bandwidth(int mem_khz, int bus_bits) {
  return mem_khz > 0 && bus_bits > 0 ? 1e3 * mem_khz * bus_bits * 2.0 / 8.0 : 0.0;
}
// Cards below this peak take the H100's settings below.
constexpr double kSlowMemoryBandwidth = 4e12;
constexpr bool slow_memory(double peak_bw) { return peak_bw > 0.0 && peak_bw < kSlowMemoryBandwidth; }

// The fused MLP's ring slots at r rows before the shared-memory limit trims them (the engine's mlp_slots). Measured
// (docs/cuda-gpt.md, sessions 15, 23 and 36): on the H200 (4.9 TB/s peak) 5 beat 6 at one prompt and at batch 4; on
// the H100 (3.35 TB/s), where a block's 24 KB stage stays in flight longer, 7 slots were best at one prompt and 6 at
// 3-8 rows. So below 4 TB/s 7 / 6, else (and where the bandwidth is unknown) 5.
constexpr int mlp_ring_depth(int r, double peak_bw) { return slow_memory(peak_bw) ? (r <= 2 ? 7 : 6) : 5; }

// Which kernels launch their successor at their own start instead of after their wait (the engine's early_trig,
// pdl_early_trigger in gpt_device.cuh): bit 0 the attention (its o-proj), bit 1 the o-proj (the MLP). Measured
// (docs/cuda-gpt.md, sessions 24, 37, 38 and 39): the attention's alone pays on both cards (H100 -2.1% / -1.0% at
// one prompt, v0.1 / v0.5; H200 -1.6% / -0.8%, batch 4 -0.6% / -0.5%); the o-proj's on top of it pays on the H100
// (-1.7% / -1.3%) and costs on the H200 (+1.0% / +0.6% against the attention's alone). So bit 0 everywhere, bit 1
// below 4 TB/s.
constexpr int early_trigger_bits(double peak_bw) { return slow_memory(peak_bw) ? 3 : 1; }

}  // namespace cubeforge::cuda::detail
