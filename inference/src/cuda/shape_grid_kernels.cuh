// Device kernels of the CUDA shape stage's grids (issue 8): analytic fields on grid points and the coarse-to-fine
// rules of grid.h (cell flags, dilation, the "needs evaluation" predicate used for stream compaction, the z/y/x
// midpoint interpolation passes). Kernels that are not templates: included by shape_grid.cu only.
#pragma once
#include <cstdint>

#include "shape_gpu_kernels.cuh"

namespace cubeforge::cuda::shape_detail {

__device__ __forceinline__ bool test_bit(const uint32_t* bits, uint32_t f) { return (bits[f >> 5] >> (f & 31)) & 1u; }

// ---- analytic fields (analytic_fields.h), no contraction so that the operation order is the host's -------------
__device__ __forceinline__ float analytic_value(int kind, float a, float b, float x, float y, float z) {
  if (kind == 1) {  // sphere of radius a at the origin
    const float r2 = __fadd_rn(__fadd_rn(__fmul_rn(x, x), __fmul_rn(y, y)), __fmul_rn(z, z));
    return __fsub_rn(a, __fsqrt_rn(r2));
  }
  // torus around y, major radius a, minor radius b
  const float q = __fsub_rn(__fsqrt_rn(__fadd_rn(__fmul_rn(x, x), __fmul_rn(z, z))), a);
  return __fsub_rn(b, __fsqrt_rn(__fadd_rn(__fmul_rn(q, q), __fmul_rn(y, y))));
}

// values[flat] = field at the points of ps (coords: the rb-9 axis, indexed by final-grid index << shift); bits set.
__global__ void analytic_kernel(PointSet ps, size_t count, const float* __restrict__ axis, int kind, float a, float b,
                                float* __restrict__ values, uint32_t* __restrict__ bits) {
  const size_t p = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= count) return;
  uint32_t i, j, k;
  ps.ijk(p, i, j, k);
  const float v = analytic_value(kind, a, b, axis[i << ps.shift], axis[j << ps.shift], axis[k << ps.shift]);
  const uint32_t f = ps.flat(i, j, k);
  values[f] = v;
  if (bits) atomicOr(bits + (f >> 5), 1u << (f & 31));
}

// ---- coarse-to-fine (grid.h evaluate_adaptive) ------------------------------------------------------------------
// Cell (ci, cj, ck) of a level with nc cells per axis and stride s: flag = its parent (ci/2, cj/2, ck/2) of the
// previous level was refined (or no parent mask: the coarse level) and its 8 corners straddle 0 or one has |v| < margin.
__global__ void flag_cells_kernel(const float* __restrict__ values, uint32_t M, uint32_t nc, uint32_t s, float margin,
                                  const uint8_t* __restrict__ parent_refined, uint32_t np, uint8_t* __restrict__ flag) {
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t total = size_t(nc) * nc * nc;
  if (t >= total) return;
  const uint32_t ck = uint32_t(t % nc), cj = uint32_t((t / nc) % nc), ci = uint32_t(t / (size_t(nc) * nc));
  if (parent_refined && !parent_refined[(size_t(ci >> 1) * np + (cj >> 1)) * np + (ck >> 1)]) {
    flag[t] = 0;
    return;
  }
  const size_t MM = size_t(M) * M;
  const size_t base = (size_t(ci) * s) * MM + (size_t(cj) * s) * M + size_t(ck) * s;
  bool pos = false, neg = false, near = false;
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const float v = values[base + ((c & 1) ? s * MM : 0) + ((c & 2) ? size_t(s) * M : 0) + ((c & 4) ? s : 0)];
    if (v >= 0.0f) pos = true; else neg = true;
    if (fabsf(v) < margin) near = true;
  }
  flag[t] = ((pos && neg) || near) ? 1 : 0;
}

// refine[r] = some flagged cell within Chebyshev distance d of r (np cells per axis).
__global__ void dilate_kernel(const uint8_t* __restrict__ flag, uint32_t np, int d, uint8_t* __restrict__ refine) {
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= size_t(np) * np * np) return;
  const int k = int(t % np), j = int((t / np) % np), i = int(t / (size_t(np) * np));
  const int n = int(np);
  uint8_t any = 0;
  for (int a = max(0, i - d); a <= min(n - 1, i + d) && !any; ++a)
    for (int b = max(0, j - d); b <= min(n - 1, j + d) && !any; ++b)
      for (int e = max(0, k - d); e <= min(n - 1, k + d); ++e)
        if (flag[(size_t(a) * n + b) * n + e]) {
          any = 1;
          break;
        }
  refine[t] = any;
}

// Selection predicate over the level-local indices of a level with n = 2*np + 1 points per axis: the point lies in a
// refined parent cell and was not evaluated before.
struct NeedPoint {
  const uint8_t* refine;
  const uint32_t* bits;
  uint32_t np, n, s, M;
  __device__ __forceinline__ bool operator()(uint32_t idx) const {
    const uint32_t nn = n * n;
    const uint32_t u = idx / nn, v = (idx / n) % n, w = idx % n;
    const uint32_t u0 = (u & 1) ? (u >> 1) : (u >> 1) - (u > 0), u1 = min(u >> 1, np - 1);
    const uint32_t v0 = (v & 1) ? (v >> 1) : (v >> 1) - (v > 0), v1 = min(v >> 1, np - 1);
    const uint32_t w0 = (w & 1) ? (w >> 1) : (w >> 1) - (w > 0), w1 = min(w >> 1, np - 1);
    bool any = false;
    for (uint32_t a = u0; a <= u1 && !any; ++a)
      for (uint32_t b = v0; b <= v1 && !any; ++b)
        for (uint32_t c = w0; c <= w1; ++c)
          if (refine[(size_t(a) * np + b) * np + c]) {
            any = true;
            break;
          }
    if (!any) return false;
    const uint32_t f = ((u * s) * M + v * s) * M + w * s;
    return !test_bit(bits, f);
  }
};

// Midpoint interpolation of the level's points that were not evaluated (grid.h rule 4). pass 0: (even, even, odd)
// along z; pass 1: (even, odd, any) along y; pass 2: (odd, any, any) along x. n points per axis, np = (n - 1) / 2.
__global__ void interp_kernel(float* __restrict__ values, const uint32_t* __restrict__ bits, uint32_t M, uint32_t n,
                              uint32_t s, int pass) {
  const uint32_t np = (n - 1) / 2, ne = np + 1;
  uint32_t da, db, dc;  // extents of the pass's index space
  if (pass == 0) { da = ne; db = ne; dc = np; }
  else if (pass == 1) { da = ne; db = np; dc = n; }
  else { da = np; db = n; dc = n; }
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= size_t(da) * db * dc) return;
  const uint32_t c = uint32_t(t % dc), b = uint32_t((t / dc) % db), a = uint32_t(t / (size_t(dc) * db));
  uint32_t u, v, w;
  size_t off;
  if (pass == 0) { u = 2 * a; v = 2 * b; w = 2 * c + 1; off = s; }
  else if (pass == 1) { u = 2 * a; v = 2 * b + 1; w = c; off = size_t(s) * M; }
  else { u = 2 * a + 1; v = b; w = c; off = size_t(s) * M * M; }
  const uint32_t f = ((u * s) * M + v * s) * M + w * s;
  if (!test_bit(bits, f)) values[f] = 0.5f * (values[f - off] + values[f + off]);
}

}  // namespace cubeforge::cuda::shape_detail
