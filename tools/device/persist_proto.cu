// Persistent layer prototype (issue 7, session 42): what one dual layer of the v0.1 decode step costs when a single
// persistent kernel streams every weight through a shared-memory ring without ever stopping at a kernel boundary, and
// its phases meet through tagged words in L2 (docs/cuda-gpt.md "Next", session 41's view). It is a pricing tool, not
// the engine: the layer's structure and bytes are the real ones, its arithmetic is simplified where that does not
// change the dependencies (no RoPE, no LN affine, no biases, no lm_head), and its result is checked against a host
// reference of the same arithmetic (persist_proto_ref.h).
//
// One block per SM (cooperative launch: every block resident), 288 threads:
//   warp 0, lane 0: the producer. It requests, in the consumers' order and across layer boundaries, the block's
//     ring stages (bulk copies of <= 24 KB: 8 weight rows of 1536 bf16, or one attention split's keys or values),
//     each as soon as its slot is free; S slots (<= 8).
//   warps 1-8: the consumers. Per layer l (epoch e = ep0 + l), row spans split evenly over the G blocks:
//     A  gather x (tagged X words, epoch e) -> LayerNorm -> xn
//     B  qkv: the block's rows of Wqkv . xn, written as tagged QKV words
//     C  attention (the first 24 * spl blocks: one (row, head) and one of spl splits of the cached prefix each):
//        gather the head's q, k, v; q/k RMSNorm; scores over the split's keys (+ the new key in the last split);
//        softmax; values; a tagged partial (o, max, sum). Split 0's block then gathers the spl partials and writes
//        the head's output (tagged ATT words).
//     E  o-proj: gather ATT -> the block's rows of x + Wo . att, tagged X1 words
//     F  gather X1 -> LayerNorm -> the block's hidden units h = silu(Wg . xn) * (Wu . xn) -> its partial of
//        Wd . h over those units (all 1536 columns), tagged PART words
//     G  reduce: the block's columns of x1 + sum of the G partials, tagged X words with epoch e + 1 (next layer's A)
//   The GEMVs of B, E and F (qkv, o-proj, gate / up) are a warp per weight row with FMA dot products (ring_gemv), or
//   with --mma tensor-core MMAs over a k-slice per warp (mma_phase); the down projection is FMA by columns in both.
// Measured (docs/cuda-gpt.md, sessions 42-43): on the H200 42.3 us per layer with ring_gemv against the engine's 31.4,
// the stream alone 17.8 us; on an H100 the --mma build checks and is no faster (44.3 against 42.9 us), and with the
// weights not streamed (--nostream) the layer still takes 34.2 us, more than the engine's layer with its weights in L2;
// a stage inside a phase costs ~0.8 us there against 0.43 in the consume-only loop. Session 45 (H100, attention_phase's
// arguments by value, no local memory in the layer loop): free weights 28.4 us (MMA) / 31.0 (FMA), streamed still 43;
// --ahead 8 / 16 / 24 slower (57.8 / 69.7 / 70.6 us) (tools/device/sessions/s45_proto.sh, s45_proto_ahead.sh).
// Besides the full layer, each run times the same schedule with consumers that only take and free each stage (the
// schedule's byte bound), and with consumers that run every stage through the GEMV's dot products and nothing else
// (the consumers' own rate; once more without the cross-proxy fence that frees a slot). --nostream adds the full layer
// and the consume-only schedule with no bytes moved after the ring's first fill (the producer only arrives; the
// consumers read the weights of S stages back): the chain's and the consumers' own time, the design's bound with free
// weights. --ahead N has the producer request, with each copy, the stage N copies later into L2 (cp.async.bulk
// .prefetch), so that DRAM keeps working while a chain holds the ring full.
// Build (repo root): nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinference/include -Iinference/src
//   -o persist_proto tools/device/persist_proto.cu
// Run: persist_proto [--layers 23] [--pos 334] [--slots 8] [--splits N] [--reps 20] [--backoff NS] [--mma] [--ahead N]
//   [--nostream] [--check]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/gpt_device.cuh"
#include "cuda/gpt_gemv.cuh"
#include "cuda/shape_gpu_kernels.cuh"
#include "persist_proto_ref.h"

using namespace cubeforge::cuda::detail;
using cubeforge::cuda::shape_detail::pack8;
using cubeforge::cuda::shape_detail::silu_f;
using cubeforge::cuda::shape_detail::unpack8;

constexpr int R = 2;                       // rows: the two guidance rows of one prompt
constexpr int QKVN = 3 * D;                // 4608
constexpr int ROWB = D * 2;                // bytes of one weight row (bf16)
constexpr int SLOT = 8 * ROWB;             // 24 KB: 8 weight rows
constexpr int MAXS = 8;                    // ring slots at most
constexpr int NCW = 8;                     // consumer warps
constexpr int NCT = 32 * NCW;              // consumer threads
constexpr int NT = NCT + 32;               // + the producer warp
constexpr int SPL_MAX = 8;                 // attention splits per (row, head) at most
constexpr int KPOS = SLOT / (HD * 2);      // 96 cached positions per key or value stage at most
constexpr int LAYER_ROWS = QKVN + D + 3 * F;  // weight rows of 1536 per layer: qkv, o, gate, up, down^T
constexpr int OFF_O = QKVN, OFF_G = QKVN + D, OFF_U = OFF_G + F, OFF_DT = OFF_U + F;
constexpr int APW = HD + 2;                // words of one attention partial: o[128], max, sum
constexpr int RED_SUB = 10;                // threads per output column in the reduce
constexpr int RED_PER = 14;                // partial sources per thread (G <= 140)
constexpr int WCH = D / 32 / NCW;          // 32-wide k chunks of a stage per consumer warp (MMA path)
constexpr int MAXST_Q = 5, MAXST_O = 2, MAXST_GU = 12;  // stages per block of qkv, o-proj, gate + up (G >= 128)
constexpr int NSTAMP = 12;                 // timeline stamps per block (the middle layer)
constexpr int HS_MAX = 48;                 // hidden units per block at most (G >= 128)

struct Proto {
  const bf16* w;                  // [L][LAYER_ROWS][D]
  bf16* kc;                       // [L][R][H][PMAX][HD] keys (already normalised)
  bf16* vc;                       // [L][R][H][PMAX][HD] values
  const float* x0;                // [R][D] the first layer's input
  unsigned long long* X;          // [R][D] tagged: a layer's input
  unsigned long long* QKV;        // [R][QKVN]
  unsigned long long* ATTP;       // [R * H][SPL_MAX][APW]
  unsigned long long* ATT;        // [R][D]
  unsigned long long* X1;         // [R][D]
  unsigned long long* PART;       // [G][R][D]
  unsigned* err;                  // [4]: failures, first code, block, layer
  unsigned long long* tl;         // [G][NSTAMP] %globaltimer stamps of the middle layer (consumer thread 0)
  int L, P, PMAX, S, spl, mode;   // mode 0: full, 1: stream only, 2: consume only (3: without the proxy fence)
  int backoff;                    // ns of __nanosleep between polling rounds that found a word missing (0: none)
  int ahead;                      // the producer prefetches the stage this many ahead of each copy into L2 (0: none)
  int nostream;                   // 1: after the first S stages the producer only arrives (the slots keep old weights)
  unsigned ep0;                   // this launch's first epoch (> 0, all buffers start at epoch 0)
};

__host__ __device__ inline int span_lo(int n, int parts, int i) { return (int)((long long)n * i / parts); }

// One ring stage of block c at layer l (k-th of the layer): its source and size.
struct Stage {
  const void* src;
  unsigned bytes;
};
struct Plan {  // the block's spans (the same for every layer)
  int q0, q1, o0, o1, f0, f1, d0, d1;
  int nq, no, nf, natt;  // stages per phase (gate and up: nf each, down: nf)
  int item, split, p0, p1;
  __device__ Plan(const Proto& p, int c, int G) {
    q0 = span_lo(QKVN, G, c), q1 = span_lo(QKVN, G, c + 1);
    o0 = span_lo(D, G, c), o1 = span_lo(D, G, c + 1);
    f0 = span_lo(F, G, c), f1 = span_lo(F, G, c + 1);
    d0 = o0, d1 = o1;
    nq = (q1 - q0 + 7) / 8, no = (o1 - o0 + 7) / 8, nf = (f1 - f0 + 7) / 8;
    natt = c < R * H * p.spl ? 2 : 0;
    item = c / p.spl, split = c % p.spl;
    p0 = span_lo(p.P, p.spl, split), p1 = span_lo(p.P, p.spl, split + 1);
  }
  __device__ int per_layer() const { return nq + natt + no + 3 * nf; }
  __device__ Stage stage(const Proto& p, int l, int k) const {
    const bf16* wl = p.w + (size_t)l * LAYER_ROWS * D;
    auto rows = [&](int off, int lo, int hi, int j) {
      const int r0 = lo + 8 * j;
      return Stage{wl + (size_t)(off + r0) * D, (unsigned)(min(8, hi - r0) * ROWB)};
    };
    if (k < nq) return rows(0, q0, q1, k);
    k -= nq;
    if (k < natt) {
      const int r = item / H, h = item % H;
      const bf16* base = (k == 0 ? p.kc : p.vc) + ((((size_t)l * R + r) * H + h) * p.PMAX + p0) * HD;
      return Stage{base, (unsigned)((p1 - p0) * HD * 2)};
    }
    k -= natt;
    if (k < no) return rows(OFF_O, o0, o1, k);
    k -= no;
    if (k < 2 * nf) return rows((k & 1) ? OFF_U : OFF_G, f0, f1, k >> 1);
    k -= 2 * nf;
    return rows(OFF_DT, f0, f1, k);
  }
};

__device__ __forceinline__ void cbar() { asm volatile("bar.sync 1, %0;" ::"n"(NCT) : "memory"); }
__device__ __forceinline__ void st_tag(unsigned long long* p, float v, unsigned ep) { st_relaxed_u64(p, tag_pack(v, ep)); }

__device__ __forceinline__ void fail(const Proto& p, int code, int layer) {
  if (atomicAdd(p.err, 1u) == 0) {
    p.err[1] = code;
    p.err[2] = blockIdx.x;
    p.err[3] = layer;
  }
}

// Polls the tagged words addr(j) for the j < PER in `want` until each carries epoch ep, handing each to sink(j, v)
// once it does (a writer that never comes: the failure is recorded after ~0.2 s and garbage used). Every load of a
// round is issued before any is checked.
template <int PER, class Addr, class Sink>
__device__ __forceinline__ void poll_tags(const Proto& p, unsigned want, unsigned ep, int code, int layer, Addr&& addr,
                                          Sink&& sink) {
  const unsigned long long t0 = gtimer();
  for (unsigned spin = 0; want; ++spin) {
    unsigned long long w[PER];
#pragma unroll
    for (int j = 0; j < PER; ++j)
      if (want >> j & 1u) w[j] = ld_relaxed_u64(addr(j));
#pragma unroll
    for (int j = 0; j < PER; ++j)
      if ((want >> j & 1u) && (unsigned)(w[j] >> 32) == ep) {
        sink(j, __uint_as_float((unsigned)w[j]));
        want &= ~(1u << j);
      }
    if ((spin & 255u) == 255u && gtimer() - t0 > 200000000ull) {
      fail(p, code, layer);
      break;
    }
    if (want && p.backoff) __nanosleep(p.backoff);
  }
}
// poll_tags over the words addr(i) for this consumer thread's i = ct + j * NCT < n, sink(i, v).
template <int PER, class Addr, class Sink>
__device__ __forceinline__ void gather(const Proto& p, int n, unsigned ep, int code, int layer, Addr&& addr, Sink&& sink) {
  const int ct = threadIdx.x - 32;
  unsigned want = 0;
#pragma unroll
  for (int j = 0; j < PER; ++j)
    if (ct + j * NCT < n) want |= 1u << j;
  poll_tags<PER>(p, want, ep, code, layer, [&](int j) { return addr(ct + j * NCT); },
                 [&](int j, float v) { sink(ct + j * NCT, v); });
}
// Gathers n <= 12 * NCT contiguous tagged words into dst.
__device__ __forceinline__ void gather_vec(const Proto& p, const unsigned long long* src, float* dst, int n, unsigned ep, int code,
                           int layer) {
  gather<12>(p, n, ep, code, layer, [&](int i) { return src + i; }, [&](int i, float v) { dst[i] = v; });
}

// Sum over the consumer threads of two values (every consumer thread calls it).
__device__ __forceinline__ float2 csum2(float a, float b, float2* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  const int w = (threadIdx.x >> 5) - 1;
  cbar();
  if ((threadIdx.x & 31) == 0) sh[w] = make_float2(a, b);
  cbar();
  float2 s = make_float2(0.f, 0.f);
#pragma unroll
  for (int i = 0; i < NCW; ++i) s.x += sh[i].x, s.y += sh[i].y;
  return s;
}

// LayerNorm (no affine) of both rows of xs [R][D] into xn; thread ct owns elements ct + j * NCT (rows: j < 6, j >= 6).
__device__ __forceinline__ void layer_norm(const float* xs, float* xn, float2* sh) {
  const int ct = threadIdx.x - 32;
  float a = 0.f, b = 0.f;
#pragma unroll
  for (int j = 0; j < 12; ++j) (j < 6 ? a : b) += xs[ct + j * NCT];
  const float2 m = csum2(a, b, sh);
  const float m0 = m.x / D, m1 = m.y / D;
  a = b = 0.f;
#pragma unroll
  for (int j = 0; j < 12; ++j) {
    const float d = xs[ct + j * NCT] - (j < 6 ? m0 : m1);
    (j < 6 ? a : b) += d * d;
  }
  const float2 v = csum2(a, b, sh);
  const float r0 = rsqrtf(v.x / D + 1e-5f), r1 = rsqrtf(v.y / D + 1e-5f);
#pragma unroll
  for (int j = 0; j < 12; ++j) {
    const int i = ct + j * NCT;
    xn[i] = (xs[i] - (j < 6 ? m0 : m1)) * (j < 6 ? r0 : r1);
  }
  cbar();
}

// A lane's slice of both rows of a GEMV input [R][D], rounded to bf16 as the reference's autocast rounds every Linear
// input, held in registers for a phase: columns (i * 32 + lane) * 8 + j (i < 6, j < 8), row 0 in the low and row 1 in
// the high half of one word. Loaded once per phase: reading the input from shared memory for every weight row made the
// GEMVs shared-memory bound (~1.4 us per 24 KB stage in session 42's first run), and fp32 registers spilled.
struct XReg {
  unsigned x[D / 32];
  __device__ __forceinline__ void load(const float* xn) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < D / 256; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int col = (i * 32 + lane) * 8 + j;
        x[i * 8 + j] = pack_bf2(xn[col], xn[D + col]);
      }
  }
};
// One warp: the dot products of a 1536-wide bf16 row in shared memory with both rows of x (all lanes get them).
__device__ __forceinline__ float2 warp_dot(const unsigned char* row, const XReg& x) {
  const int lane = threadIdx.x & 31;
  float a = 0.f, b = 0.f;
#pragma unroll
  for (int i = 0; i < D / 256; ++i) {
    float f[8];
    unpack8(*reinterpret_cast<const uint4*>(row + (i * 32 + lane) * 16), f);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      a += f[j] * bf_lo(x.x[i * 8 + j]);
      b += f[j] * bf_hi(x.x[i * 8 + j]);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  return make_float2(a, b);
}

struct Ring {
  uint64_t* full;
  uint64_t* empty;
  const unsigned char* buf;
  int S;
  RingPos rp;
  __device__ const unsigned char* take() {
    mbar_wait(&full[rp.slot], rp.phase);
    return buf + (size_t)rp.slot * SLOT;
  }
  __device__ void free() {
    ring_release(&empty[rp.slot]);
    rp.next(S);
  }
};

// The weight rows [lo, hi) from consecutive ring stages of 8 rows (consumer warp w: row 8k + w of stage k), each row's
// two dot products with x handed to out(row, value) by the warp's lane 0.
template <class Out>
__device__ __forceinline__ void ring_gemv(Ring& ring, const XReg& x, int lo, int hi, Out&& out) {
  const int cw = (threadIdx.x >> 5) - 1;
  for (int r0 = lo; r0 < hi; r0 += 8) {
    const unsigned char* s = ring.take();
    const int row = r0 + cw;
    float2 a = make_float2(0.f, 0.f);
    if (row < hi) a = warp_dot(s + cw * ROWB, x);
    ring.free();
    if (row < hi && (threadIdx.x & 31) == 0) out(row, a);
  }
}

// A lane's A fragments of the MMA path: the 8 inputs of input row x (bf16) in each of its warp's WCH 32-wide chunks.
__device__ __forceinline__ void mma_frags(const float* x, uint4 (&a)[WCH]) {
  const int t4 = threadIdx.x & 3, cw = (threadIdx.x >> 5) - 1;
#pragma unroll
  for (int c = 0; c < WCH; ++c) a[c] = pack8(*reinterpret_cast<const float(*)[8]>(x + (cw * WCH + c) * 32 + t4 * 8));
}
// One stage (8 weight rows) against the warp's k-slice: the lane's weight row is g = lane / 4 (mma_chunk's B).
__device__ __forceinline__ void mma_stage(const unsigned char* stage, const uint4 (&a)[WCH], float (&d)[4]) {
  const int lane = threadIdx.x & 31, cw = (threadIdx.x >> 5) - 1;
  const unsigned char* w = stage + (lane >> 2) * ROWB + (cw * WCH * 32 + (lane & 3) * 8) * 2;
#pragma unroll
  for (int c = 0; c < WCH; ++c) mma_chunk(d, a[c], make_uint4(0u, 0u, 0u, 0u), *reinterpret_cast<const uint4*>(w + c * 64));
}

// The same GEMVs on tensor cores (--mma): the ns (<= MAXST) stages of a phase, each 8 weight rows of 1536, split
// along k over the consumer warps (warp w: 32-wide chunks w * WCH ..). mma.m16n8k16 with the two input rows (bf16) as
// rows 0-1 of A and the stage's 8 weight rows as the 8 columns of B; the k order inside a chunk is permuted alike for
// A and B so that every lane reads 16 contiguous bytes of its weight row (the engine's mma_chunk). Each warp writes its
// partial sums of a stage to `red` (NCW * MAXST * R * 8 floats, which may alias xn); once the last stage is freed they
// are summed over the warps and out(stage, row, n, value) runs on the consumer threads, so no global store is issued
// while the phase frees ring slots.
template <int MAXST, class Out>
__device__ __forceinline__ void mma_phase(Ring& ring, const float* xn, float* red, int ns, Out&& out) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3, cw = (threadIdx.x >> 5) - 1, ct = threadIdx.x - 32;
  const uint4 z = make_uint4(0u, 0u, 0u, 0u);
  uint4 a[WCH];
  if (g < R)
    mma_frags(xn + g * D, a);
  else
    for (int c = 0; c < WCH; ++c) a[c] = z;
  cbar();  // every warp holds its fragments: red may overwrite xn
  for (int s = 0; s < ns; ++s) {
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    mma_stage(ring.take(), a, d);
    ring.free();
    if (g < R) {
      float* o = red + ((cw * MAXST + s) * R + g) * 8 + t4 * 2;
      o[0] = d[0], o[1] = d[1];
    }
  }
  cbar();
  for (int i = ct; i < ns * R * 8; i += NCT) {
    const int s = i / (R * 8), r = (i >> 3) % R, n = i & 7;
    float v = 0.f;
    for (int w = 0; w < NCW; ++w) v += red[((w * MAXST + s) * R + r) * 8 + n];
    out(s, r, n, v);
  }
  cbar();  // red (and xn) free again
}

struct __align__(16) Smem {
  float xs[R * D];        // the layer input, then x1
  float xn[R * D];        // normalised input; the attention output in E
  float hs[HS_MAX * R];   // the block's hidden units
  float gu[2][HS_MAX * R];  // their gate and up values (MMA path)
  float q[HD], k[HD], v[HD];
  float sc[KPOS + 1];     // scores, then probabilities
  float o2[2][HD];
  float cb[SPL_MAX * APW];
  float red[24 * RED_SUB];
  float2 sh[NCW];
  uint64_t full[MAXS], empty[MAXS];
};

// C: the attention split of block pl (one (row, head) item, positions [p0, p1) of the cache, plus the new key in the
// last split), then (split 0) the head's combine. Not inlined: its registers do not weigh on the layer loop's
// (with it inlined the kernel spilled 2-3x more at the 168-register cap). Its arguments come by value and the ring's
// position goes back as the result, so that no address of the caller's locals escapes into the call (which would keep
// them in local memory around every stage of the layer loop).
__device__ __noinline__ RingPos attention_phase(const Proto p, Smem& sm, Ring ring, const Plan pl, int l, unsigned ep) {
  const int ct = threadIdx.x - 32, cw = (threadIdx.x >> 5) - 1, lane = threadIdx.x & 31;
  const int ar = pl.item / H, ah = pl.item % H;
  const bool last_split = pl.split == p.spl - 1;
  const unsigned long long* qkv = p.QKV + (size_t)ar * QKVN + ah * HD;
  gather<2>(p, 3 * HD, ep, 2, l, [&](int i) { return qkv + (i / HD) * D + i % HD; },
            [&](int i, float v) { (i < HD ? sm.q : i < 2 * HD ? sm.k : sm.v)[i % HD] = v; });
  cbar();
  const float qv = ct < HD ? sm.q[ct] : 0.f, kv = ct < HD ? sm.k[ct] : 0.f;
  const float2 n2 = csum2(qv * qv, kv * kv, sm.sh);
  if (ct < HD) {
    sm.q[ct] = qv * rsqrtf(n2.x / HD + 1e-6f) * rsqrtf((float)HD);
    sm.k[ct] = kv * rsqrtf(n2.y / HD + 1e-6f);
  }
  cbar();
  if (last_split && ct < HD) {  // the new key and value into the cache (read by the next step)
    const size_t at = ((((size_t)l * R + ar) * H + ah) * p.PMAX + p.P) * HD + ct;
    p.kc[at] = __float2bfloat16_rn(sm.k[ct]);
    p.vc[at] = __float2bfloat16_rn(sm.v[ct]);
  }
  const int npos = pl.p1 - pl.p0, nt = npos + (last_split ? 1 : 0);
  {
    const unsigned char* ks = ring.take();
    for (int j = cw; j < nt; j += NCW) {
      float s = 0.f;
      if (j < npos) {
        const uint2 u = *reinterpret_cast<const uint2*>(ks + (size_t)j * HD * 2 + lane * 8);
        s = bf_lo(u.x) * sm.q[lane * 4] + bf_hi(u.x) * sm.q[lane * 4 + 1] + bf_lo(u.y) * sm.q[lane * 4 + 2] +
            bf_hi(u.y) * sm.q[lane * 4 + 3];
      } else {
        for (int i = 0; i < 4; ++i) s += sm.k[lane * 4 + i] * sm.q[lane * 4 + i];
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0) sm.sc[j] = s;
    }
    ring.free();
  }
  cbar();
  if (cw == 0) {  // softmax of the split (max and sum kept for the combine)
    float m = -INFINITY;
    for (int j = lane; j < nt; j += 32) m = fmaxf(m, sm.sc[j]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.f;
    for (int j = lane; j < nt; j += 32) {
      const float e = __expf(sm.sc[j] - m);
      sm.sc[j] = e;
      s += e;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) sm.cb[0] = m, sm.cb[1] = s;
  }
  cbar();
  {
    const unsigned char* vs = ring.take();
    const int d = ct & (HD - 1), half = ct >> 7;
    float o = 0.f;
    for (int j = half; j < npos; j += 2)
      o += sm.sc[j] * __bfloat162float(reinterpret_cast<const bf16*>(vs)[(size_t)j * HD + d]);
    sm.o2[half][d] = o;
    ring.free();
  }
  cbar();
  unsigned long long* part = p.ATTP + ((size_t)pl.item * SPL_MAX + pl.split) * APW;
  if (ct < HD) {
    float o = sm.o2[0][ct] + sm.o2[1][ct];
    if (last_split) o += sm.sc[npos] * sm.v[ct];
    st_tag(part + ct, o, ep);
  } else if (ct == HD) {
    st_tag(part + HD, sm.cb[0], ep);
    st_tag(part + HD + 1, sm.cb[1], ep);
  }
  if (pl.split == 0) {
    cbar();  // sm.cb is reused below
    const unsigned long long* parts = p.ATTP + (size_t)pl.item * SPL_MAX * APW;
    gather<5>(p, p.spl * APW, ep, 3, l, [&](int i) { return parts + i; }, [&](int i, float v) { sm.cb[i] = v; });
    cbar();
    if (ct < HD) {
      float M = -INFINITY;
      for (int s = 0; s < p.spl; ++s) M = fmaxf(M, sm.cb[s * APW + HD]);
      float num = 0.f, den = 0.f;
      for (int s = 0; s < p.spl; ++s) {
        const float e = __expf(sm.cb[s * APW + HD] - M);
        num += e * sm.cb[s * APW + ct];
        den += e * sm.cb[s * APW + HD + 1];
      }
      st_tag(p.ATT + ar * D + ah * HD + ct, num / den, ep);
    }
  }
  return ring.rp;
}

// One block of 288 threads per SM: ptxas caps it at 168 registers (__maxnreg__(224) compiled without spills but does
// not fit an SM: session 42, call 2); the attention phase is a call so that its registers stay out of this loop's.
template <bool MMA>  // the GEMVs on tensor cores (mma_phase) or a warp per weight row (ring_gemv): separate register budgets
__global__ void __launch_bounds__(NT, 1) proto_kernel(const Proto p) {
  extern __shared__ __align__(128) unsigned char ring_buf[];
  __shared__ Smem sm;
  const int G = gridDim.x, c = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const Plan pl(p, c, G);
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.S; ++s) {
      mbar_init(&sm.full[s], 1);
      mbar_init(&sm.empty[s], NCW);
    }
    mbar_fence_init();
  }
  __syncthreads();
  const int per_layer = pl.per_layer();
  if (warp == 0) {  // the producer
    if (lane == 0) {
      const uint64_t pol = policy_evict_first();
      RingPos rp;
      int i = 0;
      for (int l = 0; l < p.L; ++l)
        for (int k = 0; k < per_layer; ++k, ++i, rp.next(p.S)) {
          if (i >= p.S) mbar_wait(&sm.empty[rp.slot], rp.phase ^ 1u);
          if (p.nostream && i >= p.S) {  // no bytes: the consumers find the weights of S stages back
            mbar_arrive(&sm.full[rp.slot]);
            continue;
          }
          const Stage st = pl.stage(p, l, k);
          mbar_expect_tx(&sm.full[rp.slot], st.bytes);
          bulk_g2s_hint(ring_buf + (size_t)rp.slot * SLOT, st.src, st.bytes, &sm.full[rp.slot], pol);
          const int j = i + p.ahead;  // the stage `ahead` copies later, requested into L2 now
          if (p.ahead > 0 && j < p.L * per_layer) {
            const Stage pf = pl.stage(p, j / per_layer, j % per_layer);
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(pf.src), "r"(pf.bytes) : "memory");
          }
        }
    }
    return;
  }
  Ring ring{sm.full, sm.empty, ring_buf, p.S, RingPos()};
  const int cw = warp - 1, ct = threadIdx.x - 32;
  if (p.mode == 1) {  // stream only
    for (int i = 0; i < p.L * per_layer; ++i) {
      ring.take();
      ring.free();
    }
    return;
  }
  if (p.mode >= 2) {  // consume only: every stage through warp_dot (8 rows of 1536), no dependencies, no stores
    for (int i = ct; i < R * D; i += NCT) sm.xn[i] = p.x0[i];
    cbar();
    float sink = 0.f;
    XReg xr;
    uint4 af[WCH];
    if constexpr (MMA)
      mma_frags(sm.xn + ((lane >> 2) & 1) * D, af);
    else
      xr.load(sm.xn);
    for (int i = 0; i < p.L * per_layer; ++i) {
      const unsigned char* st = ring.take();
      if constexpr (MMA) {
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        mma_stage(st, af, d);
        sink += d[0] + d[1];
      } else {
        const float2 a = warp_dot(st + cw * ROWB, xr);
        sink += a.x + a.y;
      }
      if (p.mode == 3) {  // without the cross-proxy fence (timing only: unsafe for the data)
        __syncwarp();
        if (lane == 0) mbar_arrive(&sm.empty[ring.rp.slot]);
        ring.rp.next(p.S);
      } else {
        ring.free();
      }
    }
    if (sink == 12345.f) p.err[1] = 99;  // keeps the arithmetic
    return;
  }
  // the first layer's input: this block's columns of x0
  for (int i = ct; i < R * (pl.d1 - pl.d0); i += NCT) {
    const int r = i / (pl.d1 - pl.d0), d = pl.d0 + i % (pl.d1 - pl.d0);
    st_tag(p.X + r * D + d, p.x0[r * D + d], p.ep0);
  }
  const bool att = pl.natt > 0;
  for (int l = 0; l < p.L; ++l) {
    const unsigned ep = p.ep0 + l;
    auto stamp = [&](int i) {
      if (l == p.L / 2 && ct == 0) p.tl[c * NSTAMP + i] = gtimer();
    };
    stamp(0);
    // A: the layer input, normalised
    cbar();  // the previous layer's reduce has read sm.xs
    gather_vec(p, p.X, sm.xs, R * D, ep, 1, l);
    stamp(1);
    cbar();
    layer_norm(sm.xs, sm.xn, sm.sh);
    stamp(2);
    // B: qkv rows
    XReg xr;
    if constexpr (MMA) {
      mma_phase<MAXST_Q>(ring, sm.xn, sm.xn, pl.nq, [&](int st, int r, int n, float v) {
        const int row = pl.q0 + 8 * st + n;
        if (row < pl.q1) st_tag(p.QKV + r * QKVN + row, v, ep);
      });
    } else {
      xr.load(sm.xn);
      ring_gemv(ring, xr, pl.q0, pl.q1, [&](int row, float2 a) {
        st_tag(p.QKV + row, a.x, ep);
        st_tag(p.QKV + QKVN + row, a.y, ep);
      });
    }
    stamp(3);
    // C: attention split, then (split 0) the head's combine
    if (att) ring.rp = attention_phase(p, sm, ring, pl, l, ep);
    stamp(4);
    // E: o-proj rows, with the residual
    cbar();
    gather_vec(p, p.ATT, sm.xn, R * D, ep, 4, l);
    stamp(5);
    cbar();
    if constexpr (MMA) {
      mma_phase<MAXST_O>(ring, sm.xn, sm.xn, pl.no, [&](int st, int r, int n, float v) {
        const int row = pl.o0 + 8 * st + n;
        if (row < pl.o1) st_tag(p.X1 + r * D + row, sm.xs[r * D + row] + v, ep);
      });
    } else {
      xr.load(sm.xn);
      ring_gemv(ring, xr, pl.o0, pl.o1, [&](int row, float2 a) {
        st_tag(p.X1 + row, sm.xs[row] + a.x, ep);
        st_tag(p.X1 + D + row, sm.xs[D + row] + a.y, ep);
      });
    }
    stamp(6);
    // F: the MLP's hidden units and their partial of the down projection
    cbar();
    gather_vec(p, p.X1, sm.xs, R * D, ep, 5, l);
    stamp(7);
    cbar();
    layer_norm(sm.xs, sm.xn, sm.sh);
    stamp(8);
    if constexpr (MMA) {
      mma_phase<MAXST_GU>(ring, sm.xn, sm.xn, 2 * pl.nf, [&](int st, int r, int n, float v) {
        const int u = 8 * (st >> 1) + n;
        if (pl.f0 + u < pl.f1) sm.gu[st & 1][u * R + r] = v;
      });
      for (int i = ct; i < (pl.f1 - pl.f0) * R; i += NCT) {
        const float g = sm.gu[0][i];
        sm.hs[i] = silu_f(g) * sm.gu[1][i];
      }
    } else {
      xr.load(sm.xn);
    }
    for (int k = 0; k < (MMA ? 0 : pl.nf); ++k) {
      const int u = 8 * k + cw;
      const bool ok = pl.f0 + u < pl.f1;
      const unsigned char* gs = ring.take();
      float2 g = make_float2(0.f, 0.f), v = g;
      if (ok) g = warp_dot(gs + cw * ROWB, xr);
      ring.free();
      const unsigned char* us = ring.take();
      if (ok) v = warp_dot(us + cw * ROWB, xr);
      ring.free();
      if (ok && lane == 0) {
        sm.hs[u * R] = silu_f(g.x) * v.x;
        sm.hs[u * R + 1] = silu_f(g.y) * v.y;
      }
    }
    cbar();
    stamp(9);
    float acc[R][8] = {};
    for (int k = 0; k < pl.nf; ++k) {
      const unsigned char* ds = ring.take();
      const int nu = min(8, pl.f1 - pl.f0 - 8 * k);
      if (ct < D / 8)
        for (int j = 0; j < nu; ++j) {
          float f[8];
          unpack8(*reinterpret_cast<const uint4*>(ds + (size_t)j * ROWB + ct * 16), f);
          const float h0 = sm.hs[(8 * k + j) * R], h1 = sm.hs[(8 * k + j) * R + 1];
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[0][e] += h0 * f[e], acc[1][e] += h1 * f[e];
        }
      ring.free();
    }
    if (ct < D / 8) {
      unsigned long long* part = p.PART + (size_t)c * R * D + ct * 8;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int e = 0; e < 8; e += 2)
          st_relaxed_v2_u64(part + r * D + e, tag_pack(acc[r][e], ep), tag_pack(acc[r][e + 1], ep));
    }
    stamp(10);
    // G: this block's columns of the next layer's input
    const int nc = pl.d1 - pl.d0, nout = R * nc;
    {
      const int o = ct / RED_SUB, sub = ct % RED_SUB;
      const int r = o / max(nc, 1), col = pl.d0 + o % max(nc, 1);
      float sum = 0.f;
      if (o < nout) {
        const unsigned long long* src = p.PART + (size_t)r * D + col;
        float vals[RED_PER];
        unsigned want = 0;
#pragma unroll
        for (int j = 0; j < RED_PER; ++j)
          if (sub + j * RED_SUB < G) want |= 1u << j;
        poll_tags<RED_PER>(p, want, ep, 6, l, [&](int j) { return src + (size_t)(sub + j * RED_SUB) * R * D; },
                           [&](int j, float v) { vals[j] = v; });
#pragma unroll
        for (int j = 0; j < RED_PER; ++j)
          if (sub + j * RED_SUB < G) sum += vals[j];
      }
      if (o < 24) sm.red[o * RED_SUB + sub] = sum;
      cbar();
      if (ct < nout) {
        const int rr = ct / nc, cc = pl.d0 + ct % nc;
        float t = sm.xs[rr * D + cc];
        for (int s = 0; s < RED_SUB; ++s) t += sm.red[ct * RED_SUB + s];
        st_tag(p.X + rr * D + cc, t, ep + 1);
      }
    }
    stamp(11);
  }
}

// ---- host ---------------------------------------------------------------------------------------------------------
__global__ void fill_bf16(bf16* w, size_t n, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    w[i] = __float2bfloat16_rn(persist_ref::fill_value(i, seed, scale));
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) try {
  int L = 23, P = 334, S = 8, reps = 20, backoff = 0, spl_arg = 0, mma = 0, ahead = 0;
  bool check = false, nostream = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : throw cubeforge::Error("missing value after " + a); };
    if (a == "--layers") L = next();
    else if (a == "--pos") P = next();
    else if (a == "--slots") S = next();
    else if (a == "--reps") reps = next();
    else if (a == "--backoff") backoff = next();
    else if (a == "--splits") spl_arg = next();
    else if (a == "--mma") mma = 1;
    else if (a == "--ahead") ahead = next();
    else if (a == "--nostream") nostream = true;
    else if (a == "--check") check = true;
    else throw cubeforge::Error("unknown argument " + a);
  }
  cudaDeviceProp prop;
  CF_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int G = prop.multiProcessorCount, PMAX = 512;
  const int spl = spl_arg > 0 ? spl_arg : std::min(SPL_MAX, G / (R * H));
  if (L < 1 || L > 60 || S < 2 || S > MAXS || G > RED_SUB * RED_PER || G < 128 || spl < 1 || spl > SPL_MAX ||
      R * H * spl > G || P < spl ||
      (P + spl - 1) / spl > KPOS || P >= PMAX || ahead < 0)
    throw cubeforge::Error("unsupported configuration (layers 1-60, slots 2-8, 128-140 SMs, pos < 512 and <= 96 per split, "
                           "ahead >= 0)");
  const size_t wn = (size_t)L * LAYER_ROWS * D, kvn = (size_t)L * R * H * PMAX * HD;
  bf16 *w, *kc, *vc;
  float* x0;
  unsigned long long *X, *QKV, *ATTP, *ATT, *X1, *PART;
  unsigned* err;
  CF_CUDA(cudaMalloc(&w, wn * 2));
  CF_CUDA(cudaMalloc(&kc, kvn * 2));
  CF_CUDA(cudaMalloc(&vc, kvn * 2));
  CF_CUDA(cudaMalloc(&x0, R * D * 4));
  const size_t tagged = (size_t)R * D * 3 + (size_t)R * QKVN + (size_t)R * H * SPL_MAX * APW + (size_t)G * R * D;
  CF_CUDA(cudaMalloc(&X, tagged * 8));
  CF_CUDA(cudaMemset(X, 0, tagged * 8));
  ATT = X + R * D, X1 = ATT + R * D, QKV = X1 + R * D, ATTP = QKV + R * QKVN, PART = ATTP + R * H * SPL_MAX * APW;
  unsigned long long* tl;
  CF_CUDA(cudaMalloc(&tl, (size_t)G * NSTAMP * 8));
  CF_CUDA(cudaMemset(tl, 0, (size_t)G * NSTAMP * 8));
  CF_CUDA(cudaMalloc(&err, 16));
  CF_CUDA(cudaMemset(err, 0, 16));
  for (int l = 0; l < L; ++l) {  // weight scales: unit-variance outputs for unit-variance inputs
    bf16* wl = w + (size_t)l * LAYER_ROWS * D;
    fill_bf16<<<1024, 256>>>(wl, (size_t)OFF_DT * D, persist_ref::weight_seed(l, false), persist_ref::weight_scale(false));
    fill_bf16<<<1024, 256>>>(wl + (size_t)OFF_DT * D, (size_t)F * D, persist_ref::weight_seed(l, true),
                             persist_ref::weight_scale(true));
  }
  fill_bf16<<<1024, 256>>>(kc, kvn, persist_ref::KEY_SEED, persist_ref::kv_scale());
  fill_bf16<<<1024, 256>>>(vc, kvn, persist_ref::VALUE_SEED, persist_ref::kv_scale());
  std::vector<float> hx0(R * D);
  for (int i = 0; i < R * D; ++i) hx0[i] = persist_ref::x0_value(i);
  CF_CUDA(cudaMemcpy(x0, hx0.data(), R * D * 4, cudaMemcpyHostToDevice));
  CF_CUDA(cudaDeviceSynchronize());

  const size_t smem = (size_t)S * SLOT;
  const void* kernel = mma ? (const void*)proto_kernel<true> : (const void*)proto_kernel<false>;
  CF_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per_sm = 0;
  CF_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, NT, smem));
  if (per_sm < 1) throw cubeforge::Error("the kernel does not fit an SM with this ring");
  // bytes per layer: weights + the cached keys and values the attention splits read
  const double layer_bytes = (double)LAYER_ROWS * ROWB + 2.0 * R * H * P * HD * 2;

  const double copy_gbs = copy_bandwidth_bytes_per_s() / 1e9;
  std::printf("device: %s, %d SMs; copy %.0f GB/s; layers %d, cached positions %d, %d attention splits, ring %d x %d KB, "
              "backoff %d ns, GEMVs %s, L2 prefetch %d stages ahead\n", prop.name, G, copy_gbs, L, P, spl, S, SLOT / 1024,
              backoff, mma ? "on tensor cores" : "a warp per row", ahead);
  std::printf("bytes per layer %.2f MB (%.2f us at copy speed)\n", layer_bytes / 1e6, layer_bytes / copy_gbs / 1e3);

  unsigned ep = 1;
  cudaEvent_t a, z;
  CF_CUDA(cudaEventCreate(&a));
  CF_CUDA(cudaEventCreate(&z));
  auto launch = [&](int mode, int nost = 0) {
    Proto p{w, kc, vc, x0, X, QKV, ATTP, ATT, X1, PART, err, tl, L, P, PMAX, S, spl, mode, backoff, ahead, nost, ep};
    ep += (unsigned)L + 1;
    void* args[] = {&p};
    CF_CUDA(cudaEventRecord(a));
    CF_CUDA(cudaLaunchCooperativeKernel(kernel, dim3(G), dim3(NT), args, smem, 0));
    CF_CUDA(cudaEventRecord(z));
    CF_CUDA(cudaEventSynchronize(z));
    float t;
    CF_CUDA(cudaEventElapsedTime(&t, a, z));
    unsigned e[4];
    CF_CUDA(cudaMemcpy(e, err, 16, cudaMemcpyDeviceToHost));
    if (e[0])
      throw cubeforge::Error("a gather timed out: " + std::to_string(e[0]) + " failures, first code " +
                             std::to_string(e[1]) + " block " + std::to_string(e[2]) + " layer " + std::to_string(e[3]));
    return (double)t * 1e3;
  };
  static const char* mode_names[] = {"full layer", "stream only", "consume only", "consume, no proxy fence"};
  struct Run {
    int mode, nost;
  };
  std::vector<Run> runs = {{0, 0}, {1, 0}, {0, 0}, {1, 0}, {2, 0}, {3, 0}};
  if (nostream) runs.insert(runs.end(), {{0, 1}, {2, 1}, {3, 1}, {0, 1}, {2, 1}, {3, 1}});
  for (const Run& run : runs) {
    launch(run.mode, run.nost);  // warm-up
    std::vector<double> us;
    for (int r = 0; r < reps; ++r) us.push_back(launch(run.mode, run.nost));
    const double m = median(us);
    const std::string name = std::string(mode_names[run.mode]) + (run.nost ? ", no stream" : "");
    std::printf("%-34s launch median %8.1f us (min %8.1f, max %8.1f) = %6.2f us per layer, %5.0f GB/s = %4.1f%% of copy\n",
                name.c_str(), m, *std::min_element(us.begin(), us.end()), *std::max_element(us.begin(), us.end()),
                m / L, layer_bytes * L / (m * 1e3), 100.0 * layer_bytes * L / (m * 1e3) / copy_gbs);
  }
  // the middle layer's timeline of a full launch (medians over the blocks, from the earliest stamp 0)
  auto timeline = [&](int nost) {
    launch(0, nost);
    std::vector<unsigned long long> t((size_t)G * NSTAMP);
    CF_CUDA(cudaMemcpy(t.data(), tl, t.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (int b = 0; b < G; ++b) t0 = std::min(t0, t[b * NSTAMP]);
    static const char* names[NSTAMP] = {"layer start",    "x landed",   "x normalised", "qkv done",
                                        "attention done", "att landed", "o-proj done",  "x1 landed",
                                        "x1 normalised",  "gate/up done", "down done",  "reduce done"};
    std::printf("middle layer timeline%s (us from the first block's start; median / max (its block) over blocks; "
                "attention blocks' median):\n", nost ? ", weights not streamed" : "");
    for (int i = 0; i < NSTAMP; ++i) {
      std::vector<double> v, va;
      for (int b = 0; b < G; ++b) {
        v.push_back((double)(t[b * NSTAMP + i] - t0) / 1e3);
        if (b < R * H * spl) va.push_back(v.back());
      }
      const auto mx = std::max_element(v.begin(), v.end());
      std::printf("  %-15s %7.2f / %7.2f (%3d)   %7.2f\n", names[i], median(v), *mx, (int)(mx - v.begin()), median(va));
    }
  };
  timeline(0);
  if (nostream) timeline(1);
  if (check) {
    launch(0);
    std::vector<unsigned long long> xt(R * D);
    CF_CUDA(cudaMemcpy(xt.data(), X, R * D * 8, cudaMemcpyDeviceToHost));
    std::vector<uint16_t> hw(wn), hk(kvn), hv(kvn);
    CF_CUDA(cudaMemcpy(hw.data(), w, wn * 2, cudaMemcpyDeviceToHost));
    CF_CUDA(cudaMemcpy(hk.data(), kc, kvn * 2, cudaMemcpyDeviceToHost));
    CF_CUDA(cudaMemcpy(hv.data(), vc, kvn * 2, cudaMemcpyDeviceToHost));
    const std::vector<double> ref = persist_ref::reference<double>(hw, hk, hv, hx0, L, P, PMAX);
    const std::vector<double> ref32 = persist_ref::reference<float>(hw, hk, hv, hx0, L, P, PMAX);
    std::vector<double> dev(R * D);
    unsigned bad_tags = 0;
    for (int i = 0; i < R * D; ++i) {
      if ((unsigned)(xt[i] >> 32) != ep - 1) ++bad_tags;
      float v;
      const unsigned u = (unsigned)xt[i];
      std::memcpy(&v, &u, 4);
      dev[i] = v;
    }
    // The GEMV inputs are rounded to bf16, so results computed in fp32 in another order differ from the double
    // reference where a value lands on the other side of a rounding boundary; the host's own fp32 result measures that
    // noise. The device passes within 4x of it (and within the project's bf16 bar, 2e-2).
    const double e_dev = persist_ref::rel_l2(dev, ref), e_host = persist_ref::rel_l2(ref32, ref);
    const bool ok = bad_tags == 0 && e_dev <= 4 * e_host + 1e-6 && e_dev < 2e-2;
    std::printf("check against the host reference in double: relative L2 %.3e (the host's own fp32 result: %.3e), "
                "words with a wrong epoch %u: %s\n", e_dev, e_host, bad_tags, ok ? "passed" : "FAILED");
    if (!ok) return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "persist_proto: %s\n", e.what());
  return 1;
}
