// Device kernels of the CUDA shape stage's marching cubes (issue 8), with the conventions of marching_cubes.h
// (active-node compaction, per-node vertex / per-cell face counts, scans, vertex and face emission) and the case
// tables in constant memory. Included by shape_mesh.cu only, which also fills the tables (each .cu file has its own).
#pragma once
#include <cstdint>

namespace cubeforge::cuda::shape_detail {

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
