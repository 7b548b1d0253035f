// Device code of the CUDA shape stage's networks (issue 8) that several .cu files share: flash-style multi-head
// attention on mma.sync (cross-attention of query points over the latents, and the latent decoder's self-attention),
// LayerNorm / RMSNorm / residual kernels, the occupancy head, the head split and the grid points (PointSet).
// Templates and device functions only: a kernel that is not a template would be defined in every .cu file including
// this, so each lives in the one file that launches it (first layer: shape_occupancy.cu, latent input:
// shape_latents.cu, per-axis tables: shape_engine.cu, bias/activation: shape_gemm.cu).
// Conventions: row-major activations, bf16 storage, fp32 math; head_dim HD in {8, 16, 32, 64, 128} (templates);
// width a multiple of 8 up to 1024 (row kernels: a compile-time width for multiples of 256, else masked lanes).
#pragma once
#include <cstdint>

#include "cuda_common.cuh"

namespace cubeforge::cuda::shape_detail {

using detail::bf;
using detail::cp_async16;
using detail::cp_async_commit;
using detail::cp_async_wait;
using detail::bf16;
using detail::mma_bf16_16816;
using detail::pack_bf2;
using detail::round_bf;
using detail::warp_sum;

constexpr int kAttnRows = 128;   // query rows per attention block (8 warps x 16)
constexpr int kAttnTile = 64;    // latents per K/V tile
constexpr int kTableMaxRb = 9;   // per-axis tables hold the rb-9 axis (513 coordinates)

enum Act : int { kActNone = 0, kActGelu = 1, kActSilu = 2 };

__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float silu_f(float x) { return x / (1.0f + __expf(-x)); }

__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8]) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = detail::bf_lo(w[i]);
    f[2 * i + 1] = detail::bf_hi(w[i]);
  }
}
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  uint4 u;
  u.x = pack_bf2(f[0], f[1]);
  u.y = pack_bf2(f[2], f[3]);
  u.z = pack_bf2(f[4], f[5]);
  u.w = pack_bf2(f[6], f[7]);
  return u;
}

// ---- attention ---------------------------------------------------------------------------------------------------
// O[p, h*HD + d] = softmax_j(scale * Q_h[p] . K_h[j]) V_h[j][d] over j < Nkv, for p < P, every head h = blockIdx.y.
// K: [H][Npad][HD] (row j of head h), Vt: [H][HD][Npad] (transposed), both zero beyond Nkv. Grid (ceil(P/128), H),
// attn_threads(MT) threads; each warp owns 16 MT query rows (MT m16 tiles; the block's warps share each K/V tile:
// L2 reads per point halve vs 64 rows); online softmax in fp32 (exp2 with scale folded into scale_log2),
// probabilities rounded to bf16 for the P.V product (as flash attention does).
// HD (head dim) in {8, 16, 32, 64, 128}: Q.K^T runs ceil(HD/16) k-steps of m16n8k16 (HD 8: the upper half of the one
// step is zero), P.V writes HD/8 n-tiles. HD 64 is the full-size model's instantiation.
// Session 18: up to HD 64 the K/V tiles are double-buffered and copied by cp.async, so tile t + 1 streams in while
// tile t is multiplied (ncu, rb 8: this kernel was 24% of the occupancy network's time for 11% of its FLOPs, every
// tile a synchronous load between two barriers). Same arithmetic in the same order: outputs bitwise unchanged.
// Session 24: MT = 2 (4 warps of 32 rows) reads each K/V fragment from shared memory once for two m16 tiles, half
// the shared-memory traffic per score (at MT 1 a block-tile reads 128 KB of fragments: ~1000 cycles at 128 B/clk,
// more than its MMAs or its exp2s). Every row's arithmetic is the same in the same order: outputs bitwise unchanged.
__host__ __device__ constexpr int attn_threads(int MT) { return kAttnRows / (16 * MT) * 32; }
template <int HD, int MT = 1>
__global__ void __launch_bounds__(attn_threads(MT)) attention_kernel(const bf16* __restrict__ Q, int q_stride, int P,
                                                                     const bf16* __restrict__ K,
                                                                     const bf16* __restrict__ Vt, int Nkv, int Npad,
                                                                     float scale_log2, bf16* __restrict__ O,
                                                                     int o_stride) {
  static_assert(HD == 8 || HD == 16 || HD == 32 || HD == 64 || HD == 128, "head dim");
  static_assert(MT == 1 || MT == 2, "m16 tiles per warp");
  constexpr int KS = (HD + 15) / 16;  // k-steps of Q.K^T
  constexpr int NO = HD / 8;          // n-tiles of the output
  constexpr bool kHalf = HD < 16;     // HD 8: columns 8..15 of the k-step are zero
  constexpr int NBUF = HD <= 64 ? 2 : 1;  // HD 128: two buffers would pass the 48 KB of static shared memory
  constexpr int NTHR = attn_threads(MT);
  __shared__ __align__(16) bf16 Ksb[NBUF][kAttnTile][HD + 8];
  __shared__ __align__(16) bf16 Vsb[NBUF][HD][kAttnTile + 8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const int h = blockIdx.y;
  long r0[MT], r1[MT];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    r0[mt] = long(blockIdx.x) * kAttnRows + (warp * MT + mt) * 16 + g;
    r1[mt] = r0[mt] + 8;
  }
  const bf16* Qh = Q + h * HD;
  uint32_t qa[MT][KS][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const int c = ks * 16 + t4 * 2;
      const long a = r0[mt], b = r1[mt];
      qa[mt][ks][0] = a < P ? *reinterpret_cast<const uint32_t*>(Qh + a * q_stride + c) : 0u;
      qa[mt][ks][1] = b < P ? *reinterpret_cast<const uint32_t*>(Qh + b * q_stride + c) : 0u;
      qa[mt][ks][2] = !kHalf && a < P ? *reinterpret_cast<const uint32_t*>(Qh + a * q_stride + c + 8) : 0u;
      qa[mt][ks][3] = !kHalf && b < P ? *reinterpret_cast<const uint32_t*>(Qh + b * q_stride + c + 8) : 0u;
    }
  float o[MT][NO][4];
  float m0[MT], m1[MT], l0[MT], l1[MT];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int i = 0; i < NO; ++i) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.0f;
    m0[mt] = m1[mt] = -INFINITY;
    l0[mt] = l1[mt] = 0.0f;
  }
  const bf16* Kh = K + size_t(h) * Npad * HD;
  const bf16* Vh = Vt + size_t(h) * HD * Npad;
  // tile n0 into buffer b: by cp.async (double buffering) or plain 16-byte loads and stores (one buffer)
  auto copy16 = [](bf16* dst, const bf16* src) {
    if constexpr (NBUF == 2) cp_async16(dst, src);
    else *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  };
  auto load_tile = [&](int b, int n0) {
    for (int i = threadIdx.x; i < kAttnTile * HD / 8; i += NTHR) {
      const int r = i / (HD / 8), c8 = (i % (HD / 8)) * 8;
      copy16(&Ksb[b][r][c8], Kh + size_t(n0 + r) * HD + c8);
    }
    for (int i = threadIdx.x; i < HD * kAttnTile / 8; i += NTHR) {
      const int r = i >> 3, c8 = (i & 7) * 8;
      copy16(&Vsb[b][r][c8], Vh + size_t(r) * Npad + n0 + c8);
    }
    if constexpr (NBUF == 2) cp_async_commit();
  };
  if constexpr (NBUF == 2)
    if (Nkv > 0) load_tile(0, 0);  // (no copy left in flight when there is nothing to attend to)

  for (int n0 = 0, t = 0; n0 < Nkv; n0 += kAttnTile, ++t) {
    const int b = NBUF == 2 ? (t & 1) : 0;
    if constexpr (NBUF == 2) {
      // the next tile into the other buffer (its last readers passed the barrier at the end of the previous tile),
      // then wait for this one
      if (n0 + kAttnTile < Nkv) {
        load_tile(b ^ 1, n0 + kAttnTile);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
    } else {
      load_tile(0, n0);
    }
    __syncthreads();
    auto& Ks = Ksb[b];
    auto& Vs = Vsb[b];
    float s[MT][8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(&Ks[nt * 8 + g][ks * 16 + t4 * 2]);
        const uint32_t b1 = kHalf ? 0u : *reinterpret_cast<const uint32_t*>(&Ks[nt * 8 + g][ks * 16 + t4 * 2 + 8]);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          mma_bf16_16816(s[mt][nt], qa[mt][ks][0], qa[mt][ks][1], qa[mt][ks][2], qa[mt][ks][3], b0, b1);
      }
    }
    const bool tail = n0 + kAttnTile > Nkv;
    uint32_t pa[MT][4][4];  // the probabilities as the P.V product's A fragments
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float v = s[mt][nt][e] * scale_log2;
          if (tail && n0 + nt * 8 + t4 * 2 + (e & 1) >= Nkv) v = -INFINITY;
          s[mt][nt][e] = v;
        }
        mx0 = fmaxf(mx0, fmaxf(s[mt][nt][0], s[mt][nt][1]));
        mx1 = fmaxf(mx1, fmaxf(s[mt][nt][2], s[mt][nt][3]));
      }
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      const float mn0 = fmaxf(m0[mt], mx0), mn1 = fmaxf(m1[mt], mx1);  // finite: every tile has >= 1 valid latent
      const float a0 = exp2f(m0[mt] - mn0), a1 = exp2f(m1[mt] - mn1);   // 0 on the first tile (m = -inf)
      m0[mt] = mn0;
      m1[mt] = mn1;
      l0[mt] *= a0;
      l1[mt] *= a1;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        if (nt < NO) {
          o[mt][nt][0] *= a0;
          o[mt][nt][1] *= a0;
          o[mt][nt][2] *= a1;
          o[mt][nt][3] *= a1;
        }
        s[mt][nt][0] = exp2f(s[mt][nt][0] - mn0);
        s[mt][nt][1] = exp2f(s[mt][nt][1] - mn0);
        s[mt][nt][2] = exp2f(s[mt][nt][2] - mn1);
        s[mt][nt][3] = exp2f(s[mt][nt][3] - mn1);
        l0[mt] += s[mt][nt][0] + s[mt][nt][1];
        l1[mt] += s[mt][nt][2] + s[mt][nt][3];
      }
#pragma unroll
      for (int nt = 8; nt < NO; ++nt) {  // HD 128: the output tiles past the 8 score tiles
        o[mt][nt][0] *= a0;
        o[mt][nt][1] *= a0;
        o[mt][nt][2] *= a1;
        o[mt][nt][3] *= a1;
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        pa[mt][j][0] = pack_bf2(s[mt][2 * j][0], s[mt][2 * j][1]);
        pa[mt][j][1] = pack_bf2(s[mt][2 * j][2], s[mt][2 * j][3]);
        pa[mt][j][2] = pack_bf2(s[mt][2 * j + 1][0], s[mt][2 * j + 1][1]);
        pa[mt][j][3] = pack_bf2(s[mt][2 * j + 1][2], s[mt][2 * j + 1][3]);
      }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int nt = 0; nt < NO; ++nt) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(&Vs[nt * 8 + g][j * 16 + t4 * 2]);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(&Vs[nt * 8 + g][j * 16 + t4 * 2 + 8]);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          mma_bf16_16816(o[mt][nt], pa[mt][j][0], pa[mt][j][1], pa[mt][j][2], pa[mt][j][3], b0, b1);
      }
    }
    __syncthreads();  // every warp is done with buffer b before it is refilled
  }
  bf16* Oh = O + h * HD;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    float L0 = l0[mt], L1 = l1[mt];
    L0 += __shfl_xor_sync(0xffffffffu, L0, 1);
    L0 += __shfl_xor_sync(0xffffffffu, L0, 2);
    L1 += __shfl_xor_sync(0xffffffffu, L1, 1);
    L1 += __shfl_xor_sync(0xffffffffu, L1, 2);
    const float i0 = 1.0f / L0, i1 = 1.0f / L1;
#pragma unroll
    for (int nt = 0; nt < NO; ++nt) {
      const int c = nt * 8 + t4 * 2;
      if (r0[mt] < P)
        *reinterpret_cast<uint32_t*>(Oh + r0[mt] * o_stride + c) = pack_bf2(o[mt][nt][0] * i0, o[mt][nt][1] * i0);
      if (r1[mt] < P)
        *reinterpret_cast<uint32_t*>(Oh + r1[mt] * o_stride + c) = pack_bf2(o[mt][nt][2] * i1, o[mt][nt][3] * i1);
    }
  }
}

// Row kernels below: one warp per row, lane l holds the 8-element vectors l, l + 32, ... (CPL of them). kFull: W =
// CPL * 256 at compile time (the full-size model's widths, unchanged code); else W (a multiple of 8, <= CPL * 256) is
// the run-time argument w and the lanes past its last vector hold zeros that take no part in the sums.
#define CF_ROW_WIDTH() const int W = kFull ? CPL * 256 : w
#define CF_VEC_ON(c) (kFull || ((c) * 32 + lane) * 8 < W)

// This lane's vectors of a bf16 row (zeros past the row's width).
template <int CPL, bool kFull>
__device__ __forceinline__ void row_load_bf16(const bf16* __restrict__ x, int W, int lane, float (&v)[CPL][8]) {
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    if (CF_VEC_ON(c)) {
      unpack8(*reinterpret_cast<const uint4*>(x + (c * 32 + lane) * 8), v[c]);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) v[c][e] = 0.0f;
    }
  }
}
// Mean and 1 / sqrt(var + eps) of a row held as above (two-pass, fp32; the lanes past the width hold zeros).
template <int CPL, bool kFull>
__device__ __forceinline__ void row_mean_rstd(const float (&v)[CPL][8], int W, int lane, float eps, float& mean,
                                              float& r) {
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < CPL; ++c)
#pragma unroll
    for (int e = 0; e < 8; ++e) s += v[c][e];
  mean = warp_sum(s) * (1.0f / W);
  float q = 0.0f;
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    if (!CF_VEC_ON(c)) continue;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float d = v[c][e] - mean;
      q += d * d;
    }
  }
  r = rsqrtf(warp_sum(q) * (1.0f / W) + eps);
}

// ---- LayerNorm (no affine) of bf16 rows -> bf16 rows ---------------------------------------------------------------
template <int CPL, bool kFull>
__global__ void ln_bf16_kernel(const bf16* __restrict__ x, bf16* __restrict__ y, long rows, float eps, int w) {
  CF_ROW_WIDTH();
  const long row = long(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  float v[CPL][8], mean, r;
  row_load_bf16<CPL, kFull>(x + row * W, W, lane, v);
  row_mean_rstd<CPL, kFull>(v, W, lane, eps, mean, r);
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    if (!CF_VEC_ON(c)) continue;
    float o[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = (v[c][e] - mean) * r;
    *reinterpret_cast<uint4*>(y + row * W + (c * 32 + lane) * 8) = pack8(o);
  }
}

// ---- fp32 residual stream: h += o (bf16, optional), t = bf16(LN(h)) -------------------------------------------------
template <int CPL, bool kFull>
__global__ void resid_ln_f32_kernel(float* __restrict__ h, const bf16* __restrict__ o, bf16* __restrict__ t, long rows,
                                    float eps, int w) {
  CF_ROW_WIDTH();
  const long row = long(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  float v[CPL][8], mean, r;
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    if (!CF_VEC_ON(c)) {
#pragma unroll
      for (int e = 0; e < 8; ++e) v[c][e] = 0.0f;
      continue;
    }
    float* hp = h + row * W + (c * 32 + lane) * 8;
    const float4 a = *reinterpret_cast<const float4*>(hp), b = *reinterpret_cast<const float4*>(hp + 4);
    v[c][0] = a.x; v[c][1] = a.y; v[c][2] = a.z; v[c][3] = a.w;
    v[c][4] = b.x; v[c][5] = b.y; v[c][6] = b.z; v[c][7] = b.w;
    if (o) {
      float d[8];
      unpack8(*reinterpret_cast<const uint4*>(o + row * W + (c * 32 + lane) * 8), d);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[c][e] += d[e];
      *reinterpret_cast<float4*>(hp) = make_float4(v[c][0], v[c][1], v[c][2], v[c][3]);
      *reinterpret_cast<float4*>(hp + 4) = make_float4(v[c][4], v[c][5], v[c][6], v[c][7]);
    }
  }
  row_mean_rstd<CPL, kFull>(v, W, lane, eps, mean, r);
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    if (!CF_VEC_ON(c)) continue;
    float y[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) y[e] = (v[c][e] - mean) * r;
    *reinterpret_cast<uint4*>(t + row * W + (c * 32 + lane) * 8) = pack8(y);
  }
}

// ---- Points of a (level of a) grid ---------------------------------------------------------------------------------
// Point p is the level-local linear index idx = list ? list[p] : start + p of a level with n points per axis and
// stride `stride` in final-grid index units; (u, v, w) = idx split with w fastest; final-grid indices (u, v, w)*stride.
struct PointSet {
  const uint32_t* list = nullptr;
  uint32_t start = 0;
  uint32_t n = 0;
  uint32_t stride = 1;
  uint32_t M = 0;      // final grid points per axis
  uint32_t shift = 0;  // kTableMaxRb - rb: table index = final-grid index << shift
  __device__ __forceinline__ void ijk(size_t p, uint32_t& i, uint32_t& j, uint32_t& k) const {
    const uint32_t idx = list ? list[p] : start + uint32_t(p);
    const uint32_t nn = n * n;
    i = (idx / nn) * stride;
    j = ((idx / n) % n) * stride;
    k = (idx % n) * stride;
  }
  __device__ __forceinline__ uint32_t flat(uint32_t i, uint32_t j, uint32_t k) const { return (i * M + j) * M + k; }
};

// Occupancy head: logit = bf16(c_head(bf16(LN_affine(q0)))) as fp32. Written to out[p] (if out) or, for grid points,
// to values[flat] with the point's evaluated bit set (if values). A warp computes kHeadRows consecutive rows one after
// the other (row kernel, see above) with the LN affine and head weights held in registers, lane k keeps row k's logit,
// and the lanes then write their rows' results together: one atomicOr per 32-bit word of evaluated bits (the lanes
// of a word combined first) instead of one per point. Session 18 (ncu, rb 8: 7.4% of the occupancy network as one
// warp per point with its weights reloaded per row); the same arithmetic per row, so the same values and bits.
constexpr int kHeadRows = 32;
template <int CPL, bool kFull>
__global__ void head_kernel(const bf16* __restrict__ q0, long rows, float eps, const float* __restrict__ lw,
                            const float* __restrict__ lb, const float* __restrict__ hw, float hb, float* __restrict__ out,
                            PointSet ps, float* __restrict__ values, uint32_t* __restrict__ bits, int w) {
  CF_ROW_WIDTH();
  const long base = (long(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5)) * kHeadRows;
  const int lane = threadIdx.x & 31;
  if (base >= rows) return;
  float wl[CPL][8], wb[CPL][8], wh[CPL][8];
#pragma unroll
  for (int c = 0; c < CPL; ++c)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int d = (c * 32 + lane) * 8 + e;
      const bool on = CF_VEC_ON(c);
      wl[c][e] = on ? lw[d] : 0.0f;
      wb[c][e] = on ? lb[d] : 0.0f;
      wh[c][e] = on ? hw[d] : 0.0f;
    }
  const int n = int(rows - base < kHeadRows ? rows - base : kHeadRows);
  float mine = 0.0f;
  for (int k = 0; k < n; ++k) {
    const long row = base + k;
    float v[CPL][8], mean, r;
    row_load_bf16<CPL, kFull>(q0 + row * W, W, lane, v);
    row_mean_rstd<CPL, kFull>(v, W, lane, eps, mean, r);
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < CPL; ++c) {
      if (!CF_VEC_ON(c)) continue;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc = fmaf(round_bf((v[c][e] - mean) * r * wl[c][e] + wb[c][e]), wh[c][e], acc);
    }
    acc = warp_sum(acc);  // the same value in every lane
    if (lane == k) mine = round_bf(acc + hb);
  }
  const long row = base + lane;
  if (lane >= n) return;
  if (out) out[row] = mine;
  if (values) {
    uint32_t i, j, k;
    ps.ijk(size_t(row), i, j, k);
    const uint32_t f = ps.flat(i, j, k);
    values[f] = mine;
    if (bits) {
      const unsigned lanes = (n >= 32) ? 0xffffffffu : ((1u << n) - 1u);  // the lanes still here
      const unsigned same = __match_any_sync(lanes, f >> 5);
      const unsigned word_bits = __reduce_or_sync(same, 1u << (f & 31));
      if (lane == __ffs(same) - 1) atomicOr(bits + (f >> 5), word_bits);
    }
  }
}

#undef CF_ROW_WIDTH
#undef CF_VEC_ON

// Splits a fused projection into attention operands: src rows [T][src_stride] hold q (at q_off, if >= 0), k (k_off)
// and v (v_off), each W = H*HD wide. q -> Qo [T][W] and k -> K [H][Npad][HD] (RMSNorm over each head with weight qn /
// kn and eps 1e-5 when given, result bf16), v -> Vt [H][HD][Npad]. One warp per (row, head): PER dims per lane (2 up
// to HD 64, HD/32 above), lanes past HD/PER idle (zeros in the sums).
template <int HD>
__global__ void split_heads_kernel(const bf16* __restrict__ src, int src_stride, int T, int H, int q_off, int k_off,
                                   int v_off, const float* __restrict__ qn, const float* __restrict__ kn,
                                   bf16* __restrict__ Qo, bf16* __restrict__ K, bf16* __restrict__ Vt, int Npad) {
  constexpr int PER = HD > 64 ? HD / 32 : 2;
  const long wid = long(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (wid >= long(T) * H) return;
  const int row = int(wid / H), h = int(wid % H);
  const int W = H * HD;
  const bool on = lane * PER < HD;
  const int d = on ? lane * PER : 0;
  const bf16* r = src + size_t(row) * src_stride;
  auto load = [&](const bf16* p, float (&x)[PER]) {
#pragma unroll
    for (int e = 0; e < PER; e += 2) {
      const uint32_t u = on ? *reinterpret_cast<const uint32_t*>(p + h * HD + d + e) : 0u;
      x[e] = detail::bf_lo(u);
      x[e + 1] = detail::bf_hi(u);
    }
  };
  auto norm = [&](const bf16* p, const float* wn, float (&x)[PER]) {
    load(p, x);
    if (wn) {
      float ss = 0.0f;
#pragma unroll
      for (int e = 0; e < PER; e += 2) ss += x[e] * x[e] + x[e + 1] * x[e + 1];
      const float ms = warp_sum(ss) * (1.0f / HD);
      const float rr = rsqrtf(ms + 1e-5f);
#pragma unroll
      for (int e = 0; e < PER; ++e) x[e] = x[e] * rr * wn[d + e];
    }
  };
  float x[PER];
  if (q_off >= 0) {
    norm(r + q_off, qn, x);
    if (on)
#pragma unroll
      for (int e = 0; e < PER; e += 2)
        *reinterpret_cast<uint32_t*>(Qo + size_t(row) * W + h * HD + d + e) = pack_bf2(x[e], x[e + 1]);
  }
  norm(r + k_off, kn, x);
  if (on)
#pragma unroll
    for (int e = 0; e < PER; e += 2)
      *reinterpret_cast<uint32_t*>(K + (size_t(h) * Npad + row) * HD + d + e) = pack_bf2(x[e], x[e + 1]);
  load(r + v_off, x);
  if (on)
#pragma unroll
    for (int e = 0; e < PER; ++e) Vt[(size_t(h) * HD + d + e) * Npad + row] = __float2bfloat16_rn(x[e]);
}

}  // namespace cubeforge::cuda::shape_detail
