// Device kernels of the CUDA shape stage's grids and meshes (issue 8): analytic fields on grid points, the
// coarse-to-fine rules of grid.h (cell flags, dilation, the "needs evaluation" predicate used for stream compaction,
// the z/y/x midpoint interpolation passes), and marching cubes with the conventions of marching_cubes.h
// (active-node compaction, per-node vertex / per-cell face counts, scans, vertex and face emission).
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

// ---- marching cubes --------------------------------------------------------------------------------------------
__constant__ uint16_t c_case_start[257];
__constant__ uint8_t c_tri_edges[2460];
__constant__ int8_t c_edge[12][4];

struct McGrid {
  const float* v;
  uint32_t M;
  float iso;
  __device__ __forceinline__ bool in(uint32_t f) const { return v[f] >= iso; }
  // Bits 0/1/2: the x/y/z grid edge owned by node (i, j, k) joins nodes on different sides.
  __device__ __forceinline__ unsigned cross_bits(uint32_t i, uint32_t j, uint32_t k, uint32_t f) const {
    const bool s0 = in(f);
    unsigned r = 0;
    if (i + 1 < M && in(f + M * M) != s0) r |= 1u;
    if (j + 1 < M && in(f + M) != s0) r |= 2u;
    if (k + 1 < M && in(f + 1) != s0) r |= 4u;
    return r;
  }
  // Case code of the cell whose corner 0 is node (i, j, k) (corner bit set iff value >= iso); 0 outside.
  __device__ __forceinline__ unsigned cell_case(uint32_t i, uint32_t j, uint32_t k, uint32_t f) const {
    if (i + 1 >= M || j + 1 >= M || k + 1 >= M) return 0;
    const uint32_t MM = M * M;
    return unsigned(in(f)) | unsigned(in(f + MM)) << 1 | unsigned(in(f + MM + M)) << 2 | unsigned(in(f + M)) << 3 |
           unsigned(in(f + 1)) << 4 | unsigned(in(f + MM + 1)) << 5 | unsigned(in(f + MM + M + 1)) << 6 |
           unsigned(in(f + M + 1)) << 7;
  }
  __device__ __forceinline__ void ijk(uint32_t f, uint32_t& i, uint32_t& j, uint32_t& k) const {
    k = f % M;
    j = (f / M) % M;
    i = f / (M * M);
  }
};

struct McActive {
  McGrid g;
  __device__ __forceinline__ bool operator()(uint32_t f) const {
    uint32_t i, j, k;
    g.ijk(f, i, j, k);
    if (g.cross_bits(i, j, k, f)) return true;
    const unsigned c = g.cell_case(i, j, k, f);
    return c != 0 && c != 255;
  }
};

__global__ void mc_count_kernel(McGrid g, const uint32_t* __restrict__ active, uint32_t na, uint32_t* __restrict__ vcnt,
                                uint32_t* __restrict__ fcnt) {
  const uint32_t a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= na) return;
  const uint32_t f = active[a];
  uint32_t i, j, k;
  g.ijk(f, i, j, k);
  vcnt[a] = __popc(g.cross_bits(i, j, k, f));
  const unsigned c = g.cell_case(i, j, k, f);
  fcnt[a] = (c_case_start[c + 1] - c_case_start[c]) / 3;
}

// World coordinate of grid position gpos (node units), marching_cubes.h VertexMapping; no contraction.
__device__ __forceinline__ double map_coord(double gpos, uint32_t M, int mapping, double ext, double half) {
  switch (mapping) {
    case 0: return __dsub_rn(__dmul_rn(__ddiv_rn(gpos, double(M)), ext), half);
    case 1: return __dsub_rn(__dmul_rn(__ddiv_rn(__dadd_rn(gpos, 0.5), double(M)), ext), half);
    default: return __dsub_rn(__ddiv_rn(__dmul_rn(gpos, ext), double(M - 1)), half);
  }
}

__global__ void mc_vertex_kernel(McGrid g, const uint32_t* __restrict__ active, uint32_t na,
                                 const uint32_t* __restrict__ voff, int mapping, double ext, double half,
                                 float* __restrict__ pos) {
  const uint32_t a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= na) return;
  const uint32_t f = active[a];
  uint32_t i, j, k;
  g.ijk(f, i, j, k);
  const unsigned cb = g.cross_bits(i, j, k, f);
  uint32_t out = voff[a];
  const float d0 = g.v[f];
  for (int axis = 0; axis < 3; ++axis) {
    if (!(cb & (1u << axis))) continue;
    const uint32_t f1 = axis == 0 ? f + g.M * g.M : axis == 1 ? f + g.M : f + 1;
    const float d1 = g.v[f1];
    float t = __fdiv_rn(__fsub_rn(g.iso, d0), __fsub_rn(d1, d0));
    t = t > 0.0f ? fminf(t, 1.0f) : 0.0f;  // NaN -> 0, as the host code
    double gp[3] = {double(i), double(j), double(k)};
    gp[axis] = __dadd_rn(gp[axis], double(t));
    float* o = pos + size_t(out) * 3;
    o[0] = float(map_coord(gp[0], g.M, mapping, ext, half));
    o[1] = float(map_coord(gp[1], g.M, mapping, ext, half));
    o[2] = float(map_coord(gp[2], g.M, mapping, ext, half));
    ++out;
  }
}

__device__ __forceinline__ uint32_t lower_bound_u32(const uint32_t* a, uint32_t n, uint32_t key) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) >> 1;
    if (a[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

__global__ void mc_face_kernel(McGrid g, const uint32_t* __restrict__ active, uint32_t na,
                               const uint32_t* __restrict__ voff, const uint32_t* __restrict__ foff, int reverse,
                               uint32_t* __restrict__ tris) {
  const uint32_t a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= na) return;
  const uint32_t f = active[a];
  uint32_t i, j, k;
  g.ijk(f, i, j, k);
  const unsigned c = g.cell_case(i, j, k, f);
  const int t0 = c_case_start[c], t1 = c_case_start[c + 1];
  uint32_t out = foff[a];
  for (int t = t0; t < t1; t += 3) {
    uint32_t id[3];
    for (int s = 0; s < 3; ++s) {
      const int e = c_tri_edges[t + s];
      const uint32_t ni = i + c_edge[e][0], nj = j + c_edge[e][1], nk = k + c_edge[e][2];
      const int axis = c_edge[e][3];
      const uint32_t nf = (ni * g.M + nj) * g.M + nk;
      const uint32_t an = lower_bound_u32(active, na, nf);
      const unsigned cb = g.cross_bits(ni, nj, nk, nf);
      id[s] = voff[an] + __popc(cb & ((1u << axis) - 1u));
    }
    uint32_t* o = tris + size_t(out) * 3;
    if (reverse) { o[0] = id[2]; o[1] = id[1]; o[2] = id[0]; }
    else { o[0] = id[0]; o[1] = id[1]; o[2] = id[2]; }
    ++out;
  }
}

}  // namespace cubeforge::cuda::shape_detail
