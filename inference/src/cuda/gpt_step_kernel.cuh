// The fused decode step (issue 7, session 9): one persistent kernel runs a whole decode step (23 dual blocks, the
// single block, lm_head + guidance + argmax + next embedding) instead of ~118 dependent kernels.
//
// Why: with every weight served from L2 the 118-kernel step still took 0.88 ms (docs/cuda-gpt-notes.md, session 8):
// each kernel boundary is a drain of the weight stream (a kernel's blocks can only start loading once the previous
// kernel's blocks leave the SM). Here one block per SM owns a ring of 12 KB shared-memory stages that its producer
// warp fills with cp.async.bulk copies in the order the block will consume them, across phase boundaries: weights
// do not depend on activations, so DRAM keeps streaming while the consumers wait for a phase's inputs, normalise,
// run attention or publish results. Phases are separated by a grid-wide arrival counter (one atomic per block and
// phase, one spinning thread per block), not by kernel launches.
//
// Work split: every GEMV phase is cut into tiles of 8 (gate/up: 16) output rows over the full K; tile t of phase p
// belongs to block (t + off_p) % G, where off_p rotates by the tile counts of the earlier phases so the bytes per
// block even out over the step. Inside a block a K = 1536 tile is one warp's work (no cross-warp reduction: the
// epilogue runs from the warp's own MMA fragments); a K = 6144 tile (down-proj, 8 stages) is shared by the 8 consumer
// warps, one stage each, and reduced through shared memory. Attention items are (row, head, 16-key split), one warp
// each; the last split of a (row, head) combines them (as attn_decode_kernel). Numerics follow the per-kernel path
// (fp32 activations as bf16 hi + lo MMA operands, fp32 epilogues, bf16 KV cache); only summation orders differ.
//
// Status (session 9, one H200): correct (cuda-check v0.1 1.161e-2 against fp32, graph = eager bitwise, memcheck
// clean) but slower than the per-kernel path: TPOT 1.14 ms against 0.98 ms. Each of the five dependent phases per
// layer still pays ~4-6 us of grid barrier, imbalance and L2 round trips, as a kernel boundary did; L2 prefetch
// ahead of the ring, other ring depths and early key/value loads measured slower (docs/cuda-gpt.md, session 9).
// The grid barriers alone cost 0.18 ms per step; with no waits at all the blocks' own chains still take 0.89 ms
// (CUBEFORGE_GPT_STEP_DIAG 1 / 2). Opt-in only: CUBEFORGE_GPT_STEP=1.
#pragma once
#include "gpt_kernels.cuh"

namespace cubeforge::cuda::detail {

constexpr int SK_NW = 8;                     // consumer warps
constexpr int SK_THREADS = SK_NW * 32 + 32;  // + one producer warp
constexpr int SK_SC = 24;                    // 512-B weight blocks (8 rows x 32 columns, blocked layout) per stage
constexpr int SK_STAGE = SK_SC * 512;        // 12 KB
constexpr int SK_MAXST = 24;
constexpr int SK_RMAX = 4;                   // rows the fused step serves (the down-proj input is staged: 98 KB at 4)

enum SkKind { SK_QKV = 0, SK_ATTN = 1, SK_OPROJ = 2, SK_GATEUP = 3, SK_DOWN = 4, SK_LM = 5 };

struct SkPhase {
  int kind;
  int K;              // GEMV input width (1536 or 6144)
  int ntile;          // 8-row weight groups per tile (2 for gate/up)
  int tiles;          // tiles in the phase
  int off;            // tile t belongs to block (t + off) % gridDim.x
  int T;              // attention: cache slots per (row, head)
  int coff;           // attention: slot of decode position i is coff + i
  int pad;
  const bf16* W;      // blocked [N][K] (8-row groups contiguous)
  const bf16* bias;   // per output column (QKV: only columns >= 2 D, i.e. v)
  const float* add2;  // DOWN: second residual add (the single block's constant attention output) or null
  bf16* kc;           // attention: this layer's caches [R][H][T][HD]
  bf16* vc;
  const float* qn;    // attention: q / k RMSNorm weights
  const float* kn;
};

struct SkParams {
  const SkPhase* ph;
  int nph;
  int R;
  int nst;            // ring stages
  int amaxs;          // attention partials: splits (of SK_ACH keys) per (row, head) in apart
  float eps;
  int tail;           // 1: the last block picks the token (argmax / forced) and emits it; 0: top-p kernel follows
  unsigned* counter;  // phase arrivals (the last block of the step sets it back to 0)
  float* x;           // residual stream [R][D]
  float* stats;       // LN partial stats (written by emit_tokens for the per-kernel path; not read here)
  float* qkv;         // [R][QKV_LD]
  bf16* att;
  bf16* att_lo;
  bf16* hbuf;
  bf16* hbuf_lo;
  const float2* rope;
  float* apart;
  unsigned* acnt;
  const Ctl* ctl;
  Dyn* dyn;
  float* guided;
  float* raw;
  float* lm_val;      // [MAXP][gridDim.x]
  int* lm_idx;
  const float* wte;
  int* tokens;
  int* host_tokens;
  unsigned long long* tl;  // diagnostics: block 0's %globaltimer per phase (after the wait, input staged, warp 0
                           // done, arrival) and at the end of the step, or null
  unsigned long long spin_limit;
  int infl;           // > 0: the producer keeps at most this many copies in flight (a short DRAM queue, so the
                      // latency-bound loads of a phase do not wait behind every block's whole ring)
  int diag;           // timing diagnostics (wrong outputs): 1 = barriers only (no weights, no work; token 0),
                      // 2 = no waits between phases (every block runs through its work; token 0)
};

__device__ __forceinline__ unsigned ld_acquire_u32(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void sk_bar() { asm volatile("bar.sync 1, %0;" ::"n"(SK_NW * 32) : "memory"); }

// First tile of phase `ph` owned by block b, and how many it owns.
__device__ __forceinline__ void sk_my_tiles(const SkPhase& ph, int b, int G, int& t0, int& n) {
  t0 = ((b - ph.off) % G + G) % G;
  n = t0 < ph.tiles ? (ph.tiles - 1 - t0) / G + 1 : 0;
}
__device__ __forceinline__ int sk_stages_per_tile(const SkPhase& ph) { return ph.ntile * ph.K / 768; }

// One 12 KB stage of 24 chunks (32 columns each) of one 8-row group: MMAs into a / b (alternating chunks), each
// chunk's two k halves into different accumulators (four independent chains); activations: hi rows [R][AST] then
// lo rows [R][AST] in shared memory (act), chunk columns starting at k0.
__device__ __forceinline__ void sk_stage_mma(const unsigned char* stg, const bf16* act, int AST, int R, int k0,
                                             float (&a)[4], float (&b)[4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const bool has = g < R;
  const bf16* ah = act + (size_t)g * AST + k0 + t4 * 8;
  const bf16* al = act + (size_t)(R + g) * AST + k0 + t4 * 8;
  float a2[4] = {0.f, 0.f, 0.f, 0.f}, b2[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 3
  for (int c = 0; c < SK_SC; c += 2) {
    const uint4 w0 = *reinterpret_cast<const uint4*>(stg + c * 512 + lane * 16);
    const uint4 w1 = *reinterpret_cast<const uint4*>(stg + (c + 1) * 512 + lane * 16);
    uint4 h0 = make_uint4(0, 0, 0, 0), l0 = h0, h1 = h0, l1 = h0;
    if (has) {
      h0 = *reinterpret_cast<const uint4*>(ah + c * 32);
      l0 = *reinterpret_cast<const uint4*>(al + c * 32);
      h1 = *reinterpret_cast<const uint4*>(ah + (c + 1) * 32);
      l1 = *reinterpret_cast<const uint4*>(al + (c + 1) * 32);
    }
    // the chunk's two k halves into different accumulators: four chains of 12 MMAs per stage instead of two of 24
    mma_bf16_16816(a, h0.x, l0.x, h0.y, l0.y, w0.x, w0.y);
    mma_bf16_16816(a2, h0.z, l0.z, h0.w, l0.w, w0.z, w0.w);
    mma_bf16_16816(b, h1.x, l1.x, h1.y, l1.y, w1.x, w1.y);
    mma_bf16_16816(b2, h1.z, l1.z, h1.w, l1.w, w1.z, w1.w);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    a[i] += a2[i];
    b[i] += b2[i];
  }
}

// Wait for a ring stage, run its MMAs, release it (one arrival by the consuming warp). Warps consume different
// stages, so a warp can reach stage `it` before the slot's previous occupant (it - nst) has even arrived; a parity
// wait on "full" would then see that older phase as complete. So the warp first waits until the previous occupant
// was consumed (cseq[slot], the last stage index consumed from the slot), after which the parity is unambiguous.
__device__ __forceinline__ void sk_consume(unsigned char* ring, uint64_t* full, uint64_t* empty,
                                           volatile unsigned* cseq, int nst, unsigned it, const bf16* act, int AST,
                                           int R, int k0, float (&a)[4], float (&b)[4]) {
  const int slot = it % nst;
  if (it >= (unsigned)nst)
    while (cseq[slot] != it - nst) {
    }
  mbar_wait(&full[slot], (it / nst) & 1u);
  sk_stage_mma(ring + (size_t)slot * SK_STAGE, act, AST, R, k0, a, b);
  __syncwarp();
  if ((threadIdx.x & 31) == 0) {
    cseq[slot] = it;
    mbar_arrive(&empty[slot]);
  }
}

// LN of the residual stream into act (hi rows then lo rows, stride D + 32): warp r normalises row r (two-pass mean /
// variance in fp64 over the row held in registers; LayerNorm without affine, as the per-kernel path).
__device__ __forceinline__ void sk_ln(const float* x, int R, float eps, bf16* act) {
  constexpr int AST = D + 32, PER = D / 128;  // float4 per lane
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (warp >= R) return;
  float4 v[PER];
#pragma unroll
  for (int i = 0; i < PER; ++i) v[i] = ld_cg_f4(x + (size_t)warp * D + (i * 32 + lane) * 4);
  float s = 0.f;  // per-lane fp32 partials (48 values), summed over the warp in fp64
#pragma unroll
  for (int i = 0; i < PER; ++i) s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  const float mf = (float)(warp_sum_d((double)s) / D);
  float q = 0.f;
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const float a = v[i].x - mf, b = v[i].y - mf, c = v[i].z - mf, d = v[i].w - mf;
    q += (a * a + b * b) + (c * c + d * d);
  }
  const double var = warp_sum_d((double)q) / D;
  const float rs = (float)(1.0 / sqrt(var + (double)eps));
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const float y0 = (v[i].x - mf) * rs, y1 = (v[i].y - mf) * rs, y2 = (v[i].z - mf) * rs, y3 = (v[i].w - mf) * rs;
    uint2 h, l;
    h.x = pack_bf2(y0, y1);
    h.y = pack_bf2(y2, y3);
    l.x = pack_bf2(y0 - bf_lo(h.x), y1 - bf_hi(h.x));
    l.y = pack_bf2(y2 - bf_lo(h.y), y3 - bf_hi(h.y));
    const int k = (i * 32 + lane) * 4;
    *reinterpret_cast<uint2*>(act + (size_t)warp * AST + k) = h;
    *reinterpret_cast<uint2*>(act + (size_t)(R + warp) * AST + k) = l;
  }
}

// A non-LN GEMV input (bf16 hi [R][K] + lo [R][K] written earlier in this step) copied into act by cp.async (L2
// only, so never a stale L1 line), stride K + 32, and waits for them (cp.async.wait_all); the caller syncs.
__device__ __forceinline__ void sk_stage_in(const bf16* hi, const bf16* lo, int R, int K, bf16* act) {
  const int AST = K + 32, w8 = K / 8, n = R * w8;
  for (int v = threadIdx.x; v < n; v += SK_NW * 32) {
    const int r = v / w8, k = (v % w8) * 8;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(act + (size_t)r * AST + k)),
                 "l"(hi + (size_t)r * K + k)
                 : "memory");
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(act + (size_t)(R + r) * AST + k)),
                 "l"(lo + (size_t)r * K + k)
                 : "memory");
#endif
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// RMSNorm (eps 1e-5) + interleaved RoPE of the 4 dims d = 4 lane .. 4 lane + 3 of one head (a warp holds the head),
// with the per-kernel path's rounding (rms_rope).
__device__ __forceinline__ float4 sk_norm_rope(float4 r, float4 w, float2 c0, float2 c1) {
  const float ss = warp_sum(r.x * r.x + r.y * r.y + r.z * r.z + r.w * r.w);
  const float sc = rsqrtf(ss * (1.f / HD) + 1e-5f);
  const float y0 = r.x * sc * w.x, y1 = r.y * sc * w.y, y2 = r.z * sc * w.z, y3 = r.w * sc * w.w;
  float4 o;
  o.x = __fsub_rn(__fmul_rn(y0, c0.x), __fmul_rn(y1, c0.y));
  o.y = __fadd_rn(__fmul_rn(y0, c0.y), __fmul_rn(y1, c0.x));
  o.z = __fsub_rn(__fmul_rn(y2, c1.x), __fmul_rn(y3, c1.y));
  o.w = __fadd_rn(__fmul_rn(y2, c1.y), __fmul_rn(y3, c1.x));
  return o;
}

// One attention item (row r, head h, keys [16 split, 16 split + 16)) by one warp: lanes 2 j and 2 j + 1 score key
// j0 + j (64 dims each, partner sum by one shuffle); lane l accumulates output dims 4 l .. 4 l + 3. The split holding
// the current slot normalises and caches its key and value (bf16) and uses the cached values. Every key and value
// load of the item is issued before its first use (8 KB per warp in flight: 64 registers per lane). Partials go to
// apart; the last split of (r, h) to arrive combines them, as attn_decode_kernel does.
// A lane's 4 output dims o * inv (hi + lo parts) at att[oi .. oi + 3].
__device__ __forceinline__ void sk_store_out(const SkParams& p, size_t oi, float o0, float o1, float o2, float o3,
                                             float inv) {
  split_store(p.att, p.att_lo, oi, o0 * inv);
  split_store(p.att, p.att_lo, oi + 1, o1 * inv);
  split_store(p.att, p.att_lo, oi + 2, o2 * inv);
  split_store(p.att, p.att_lo, oi + 3, o3 * inv);
}

constexpr int SK_ACH = 16;        // keys per attention item
constexpr int SK_MAXSPLIT = 96;   // splits per (row, head) the combine holds (3 per lane)
__device__ __forceinline__ void sk_attn_item(const SkParams& p, const SkPhase& ph, int item, int nsplit, int L,
                                             int cur, int pos, float* qs, float* kcur, float* vcur) {
  const int lane = threadIdx.x & 31, jk = lane >> 1, half = lane & 1;
  __syncwarp();  // the previous item's reads of qs / kcur / vcur are done
  const int r = item / (H * nsplit), rem = item % (H * nsplit), h = rem / nsplit, split = rem % nsplit;
  const int j0 = split * SK_ACH;
  const size_t base = (size_t)(r * H + h) * ph.T * HD;
  const float* qrow = p.qkv + (size_t)r * QKV_LD + h * HD;
  const int j = j0 + jk;
  const bool valid = j < L;
  const bool mine_cur = j == cur;
  uint4 kr[HD / 16];
#pragma unroll
  for (int i = 0; i < HD / 16; ++i)
    kr[i] = (valid && !mine_cur) ? ld_cg16(ph.kc + base + (size_t)j * HD + half * 64 + i * 8) : make_uint4(0, 0, 0, 0);
  const int nv = min(SK_ACH, L - j0);
  uint2 vr[SK_ACH];
#pragma unroll
  for (int i = 0; i < SK_ACH; ++i)
    vr[i] = (i < nv && j0 + i != cur)
                ? __ldcg(reinterpret_cast<const uint2*>(ph.vc + base + (size_t)(j0 + i) * HD + lane * 4))
                : make_uint2(0, 0);
  const bool has_cur = cur >= j0 && cur < j0 + SK_ACH;
  const float4 qraw = ld_cg_f4(qrow + lane * 4);
  float4 kraw = make_float4(0.f, 0.f, 0.f, 0.f), vraw = kraw;
  if (has_cur) {
    kraw = ld_cg_f4(qrow + D + lane * 4);
    vraw = ld_cg_f4(qrow + 2 * D + lane * 4);
  }
  const float2 c0 = p.rope[pos * (HD / 2) + lane * 2], c1 = p.rope[pos * (HD / 2) + lane * 2 + 1];
  const float4 qo = sk_norm_rope(qraw, *reinterpret_cast<const float4*>(ph.qn + lane * 4), c0, c1);
  *reinterpret_cast<float4*>(qs + lane * 4) = qo;
  if (has_cur) {
    const float4 ko = sk_norm_rope(kraw, *reinterpret_cast<const float4*>(ph.kn + lane * 4), c0, c1);
    const uint2 kb = make_uint2(pack_bf2(ko.x, ko.y), pack_bf2(ko.z, ko.w));
    const uint2 vb = make_uint2(pack_bf2(vraw.x, vraw.y), pack_bf2(vraw.z, vraw.w));
    *reinterpret_cast<uint2*>(ph.kc + base + (size_t)cur * HD + lane * 4) = kb;
    *reinterpret_cast<uint2*>(ph.vc + base + (size_t)cur * HD + lane * 4) = vb;
    *reinterpret_cast<float4*>(kcur + lane * 4) = make_float4(bf_lo(kb.x), bf_hi(kb.x), bf_lo(kb.y), bf_hi(kb.y));
    *reinterpret_cast<float4*>(vcur + lane * 4) = make_float4(bf_lo(vb.x), bf_hi(vb.x), bf_lo(vb.y), bf_hi(vb.y));
  }
  __syncwarp();
  constexpr float scale = 0.08838834764831845f;  // 1/sqrt(128)
  const float* qh = qs + half * 64;
  float d = 0.f;
  if (mine_cur) {
    const float* kh = kcur + half * 64;
#pragma unroll 8
    for (int e = 0; e < 64; ++e) d += qh[e] * kh[e];
  } else {
#pragma unroll
    for (int i = 0; i < HD / 16; ++i) {
      const float4 qa = *reinterpret_cast<const float4*>(qh + i * 8);
      const float4 qb = *reinterpret_cast<const float4*>(qh + i * 8 + 4);
      d += qa.x * bf_lo(kr[i].x) + qa.y * bf_hi(kr[i].x) + qa.z * bf_lo(kr[i].y) + qa.w * bf_hi(kr[i].y) +
           qb.x * bf_lo(kr[i].z) + qb.y * bf_hi(kr[i].z) + qb.z * bf_lo(kr[i].w) + qb.w * bf_hi(kr[i].w);
    }
  }
  d += __shfl_xor_sync(0xffffffffu, d, 1);
  const float sc = valid ? d * scale : -INFINITY;
  const float m = warp_max(sc);
  const float pj = valid ? __expf(sc - m) : 0.f;
  const float l = warp_sum(half ? 0.f : pj);
  float o0 = 0.f, o1 = 0.f, o2 = 0.f, o3 = 0.f;
#pragma unroll
  for (int i = 0; i < SK_ACH; ++i) {
    const float pi = __shfl_sync(0xffffffffu, pj, 2 * i);
    float v0, v1, v2, v3;
    if (j0 + i == cur) {
      const float4 c = *reinterpret_cast<const float4*>(vcur + lane * 4);
      v0 = c.x, v1 = c.y, v2 = c.z, v3 = c.w;
    } else {
      v0 = bf_lo(vr[i].x), v1 = bf_hi(vr[i].x), v2 = bf_lo(vr[i].y), v3 = bf_hi(vr[i].y);
    }
    o0 += pi * v0;
    o1 += pi * v1;
    o2 += pi * v2;
    o3 += pi * v3;
  }
  const size_t oi = (size_t)r * D + h * HD + lane * 4;
  if (nsplit == 1) {
    sk_store_out(p, oi, o0, o1, o2, o3, 1.f / l);
    return;
  }
  float* parts = p.apart + (size_t)(r * H + h) * p.amaxs * (HD + 2);
  float* mypart = parts + (size_t)split * (HD + 2);
  *reinterpret_cast<float2*>(mypart + lane * 4) = make_float2(o0, o1);
  *reinterpret_cast<float2*>(mypart + lane * 4 + 2) = make_float2(o2, o3);
  if (lane == 0) {
    mypart[HD] = m;
    mypart[HD + 1] = l;
  }
  __syncwarp();
  int last = 0;
  if (lane == 0) {  // one fence by one lane after the warp's writes (the grid-sync pattern)
    __threadfence();
    last = atomicAdd(&p.acnt[r * H + h], 1u) == (unsigned)nsplit - 1;
    if (last) __threadfence();
  }
  last = __shfl_sync(0xffffffffu, last, 0);
  if (!last) return;
  // (m, l) of split lane + 32 k in register k; the o values 16 splits at a time
  float mr[3], lr[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    const int sidx = lane + 32 * k;
    mr[k] = sidx < nsplit ? __ldcg(parts + (size_t)sidx * (HD + 2) + HD) : -INFINITY;
    lr[k] = sidx < nsplit ? __ldcg(parts + (size_t)sidx * (HD + 2) + HD + 1) : 0.f;
  }
  const float M = warp_max(fmaxf(fmaxf(mr[0], mr[1]), mr[2]));
  float Ls = 0.f, O0 = 0.f, O1 = 0.f, O2 = 0.f, O3 = 0.f;
  for (int s0 = 0; s0 < nsplit; s0 += 16) {
    float2 ua[16], ub[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int sidx = s0 + i;
      ua[i] = ub[i] = make_float2(0.f, 0.f);
      if (sidx < nsplit) {
        ua[i] = __ldcg(reinterpret_cast<const float2*>(parts + (size_t)sidx * (HD + 2) + lane * 4));
        ub[i] = __ldcg(reinterpret_cast<const float2*>(parts + (size_t)sidx * (HD + 2) + lane * 4 + 2));
      }
    }
    const int k = s0 >> 5;
    const float mk = k == 0 ? mr[0] : k == 1 ? mr[1] : mr[2];
    const float lk = k == 0 ? lr[0] : k == 1 ? lr[1] : lr[2];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int sidx = s0 + i;
      const float ms = __shfl_sync(0xffffffffu, mk, sidx & 31);
      const float ls = __shfl_sync(0xffffffffu, lk, sidx & 31);
      if (sidx < nsplit) {
        const float f = __expf(ms - M);
        Ls += ls * f;
        O0 += ua[i].x * f;
        O1 += ua[i].y * f;
        O2 += ub[i].x * f;
        O3 += ub[i].y * f;
      }
    }
  }
  sk_store_out(p, oi, O0, O1, O2, O3, 1.f / Ls);
  if (lane == 0) p.acnt[r * H + h] = 0;
}

// lm_head tile epilogue: raw / guided logits, the tile's argmax per variation merged into the warp's running best
// (bv, bi of lane 4 p; larger value, then smaller index: the per-kernel path's rule).
__device__ __forceinline__ void sk_lm_epilogue(const SkParams& p, const float (&y)[2], int n0, float g1, float gm,
                                               float& bv, int& bi) {
  const Ctl* ctl = p.ctl;
  const int P = ctl->P, cfg = ctl->cfg, V = ctl->vocab, R = p.R;
  const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const int col0 = n0 + t4 * 2;
  if (ctl->write_raw && g < R) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
      if (col0 + i < V) p.raw[(size_t)g * V + col0 + i] = y[i];
  }
  const int src = (cfg && g < P) ? (P + g) * 4 + t4 : lane;
  float gv[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float lu = __shfl_sync(0xffffffffu, y[i], src);
    float v = y[i];
    if (cfg) v = __fsub_rn(__fmul_rn(g1, y[i]), __fmul_rn(gm, lu));
    if (col0 + i >= V) v = -INFINITY;
    gv[i] = v;
    if (ctl->write_guided && g < P && col0 + i < V) p.guided[(size_t)g * V + col0 + i] = v;
  }
  float tv = gv[0];
  int ti = col0;
  if (gv[1] > tv) {
    tv = gv[1];
    ti = col0 + 1;
  }
#pragma unroll
  for (int o = 1; o <= 2; o <<= 1)
    argmax_take(__shfl_xor_sync(0xffffffffu, tv, o), __shfl_xor_sync(0xffffffffu, ti, o), tv, ti);
  argmax_take(tv, ti, bv, bi);
}

__global__ void __launch_bounds__(SK_THREADS, 1) step_kernel(const SkParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int nst = p.nst, R = p.R, G = gridDim.x, b = blockIdx.x;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  unsigned char* ring = smem;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + (size_t)nst * SK_STAGE);
  uint64_t* empty = full + nst;
  volatile unsigned* cseq = reinterpret_cast<unsigned*>(empty + nst);  // per slot: last stage index consumed
  size_t off = (size_t)nst * SK_STAGE + 2 * nst * 8 + ((nst * 4 + 15) & ~15);
  float* wsc = reinterpret_cast<float*>(smem + off);  // per warp: q, current k, current v (3 x 128 floats)
  off += (size_t)SK_NW * 3 * HD * 4;
  float* red = reinterpret_cast<float*>(smem + off);  // down-proj cross-warp sums: [2][SK_NW][32][2]
  off += (size_t)2 * SK_NW * 32 * 2 * 4;
  float* lmv = reinterpret_cast<float*>(smem + off);  // [SK_NW][MAXP]
  int* lmi = reinterpret_cast<int*>(lmv + SK_NW * MAXP);
  int* flag = lmi + SK_NW * MAXP;  // [0] last block, [1 ..] chosen tokens
  off += (size_t)SK_NW * MAXP * 8 + 16 * 4;
  bf16* act = reinterpret_cast<bf16*>(smem + ((off + 127) & ~size_t(127)));

  if (threadIdx.x == 0) {
    for (int i = 0; i < nst; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], 1);
      cseq[i] = 0xffffffffu;
    }
    mbar_fence_init();
  }
  __syncthreads();  // the only whole-block barrier: the producer warp joins no other

  if (warp == SK_NW) {  // ---- producer: the block's weight stages, in consumption order, for the whole step ----
    if (lane == 0 && !(p.diag & 1)) {
      unsigned it = 0;
      for (int pi = 0; pi < p.nph; ++pi) {
        const SkPhase& ph = p.ph[pi];
        if (ph.kind == SK_ATTN) continue;
        int t0, n;
        sk_my_tiles(ph, b, G, t0, n);
        const int spt = sk_stages_per_tile(ph);
        const size_t tile_elems = (size_t)ph.ntile * ph.K * 8;
        for (int jj = 0; jj < n; ++jj) {
          const bf16* src = ph.W + (size_t)(t0 + jj * G) * tile_elems;
          for (int s = 0; s < spt; ++s, ++it) {
            const int slot = it % nst;
            if (it >= (unsigned)nst) mbar_wait(&empty[slot], ((it / nst) - 1) & 1u);
            if (p.infl > 0 && it >= (unsigned)p.infl) {  // at most infl copies in flight (stage it - infl landed)
              const unsigned o = it - (unsigned)p.infl;
              mbar_wait(&full[o % nst], (o / nst) & 1u);
            }
            mbar_expect_tx(&full[slot], SK_STAGE);
            bulk_g2s(ring + (size_t)slot * SK_STAGE, src + (size_t)s * (SK_STAGE / 2), SK_STAGE, &full[slot]);
          }
        }
      }
    }
    return;
  }

  // ---- consumers ----
  const int pos = __ldcg(&p.dyn->pos);
  const Ctl* ctl = p.ctl;
  float* qs = wsc + warp * 3 * HD;
  float* kcur = qs + HD;
  float* vcur = kcur + HD;
  unsigned it_base = 0;
  for (int pi = 0; pi < p.nph; ++pi) {
    const SkPhase ph = p.ph[pi];
    const bool work = !(p.diag & 1);
    if (pi > 0 && !(p.diag & 2)) {  // all blocks have published phase pi - 1
      if (threadIdx.x == 0) {
        const unsigned target = (unsigned)pi * (unsigned)G;
        unsigned long long n = 0;
        while (ld_acquire_u32(p.counter) < target)
          if (++n > p.spin_limit) __trap();  // a block never arrived: fail loudly instead of hanging
        __threadfence();
      }
      sk_bar();
    }
    if (p.tl && b == 0 && threadIdx.x == 0) p.tl[4 * pi] = gtimer();
    // the phase's input in shared memory
    if (!work) {
    } else if (ph.kind == SK_QKV || ph.kind == SK_GATEUP || ph.kind == SK_LM) {
      sk_ln(p.x, R, p.eps, act);
      sk_bar();
    } else if (ph.kind == SK_OPROJ) {
      sk_stage_in(p.att, p.att_lo, R, D, act);
      sk_bar();
    } else if (ph.kind == SK_DOWN) {
      sk_stage_in(p.hbuf, p.hbuf_lo, R, F, act);
      sk_bar();
    }
    if (p.tl && b == 0 && threadIdx.x == 0) p.tl[4 * pi + 1] = gtimer();
    float bv = -INFINITY;  // lm_head: this warp's running best of variation lane / 4
    int bi = 0x7fffffff;
    if (!work) {
    } else if (ph.kind == SK_ATTN) {
      const int cur = ph.coff + pos, L = cur + 1, nsplit = (L + SK_ACH - 1) / SK_ACH, items = R * H * nsplit;
      for (int i = b + G * warp; i < items; i += G * SK_NW) sk_attn_item(p, ph, i, nsplit, L, cur, pos, qs, kcur, vcur);
    } else {
      int t0, n;
      sk_my_tiles(ph, b, G, t0, n);
      const int spt = sk_stages_per_tile(ph);
      const int g = lane >> 2, t4 = lane & 3;
      if (ph.kind == SK_DOWN) {  // K = 6144: the 8 warps share a tile, one stage (768 columns) each
        for (int jj = 0; jj < n; ++jj) {
          const int t = t0 + jj * G;
          float a[4] = {0.f, 0.f, 0.f, 0.f}, c[4] = {0.f, 0.f, 0.f, 0.f};
          sk_consume(ring, full, empty, cseq, nst, it_base + jj * spt + warp, act, F + 32, R, warp * 768, a, c);
          float* rb = red + (size_t)(jj & 1) * SK_NW * 64;
          rb[(warp * 32 + lane) * 2] = (a[0] + c[0]) + (a[2] + c[2]);
          rb[(warp * 32 + lane) * 2 + 1] = (a[1] + c[1]) + (a[3] + c[3]);
          sk_bar();
          if (warp == 0 && g < R) {
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              float y = 0.f;
#pragma unroll
              for (int w = 0; w < SK_NW; ++w) y += rb[(w * 32 + lane) * 2 + i];
              const int col = t * 8 + t4 * 2 + i;
              float xv = __ldcg(p.x + (size_t)g * D + col);
              xv = xv + (y + bf(ph.bias[col]));
              if (ph.add2) xv = xv + __ldcg(ph.add2 + (size_t)g * D + col);
              p.x[(size_t)g * D + col] = xv;
            }
          }
        }
      } else {
        const int AST = ph.K + 32;
        const double gd = ph.kind == SK_LM ? ctl->guidance * (double)(ctl->N - pos) / (double)ctl->N : 0.0;
        const float g1 = (float)(1.0 + gd), gm = (float)gd;
        for (int jj = warp; jj < n; jj += SK_NW) {
          const int t = t0 + jj * G;
          const unsigned it = it_base + jj * spt;
          float y[2][2];
#pragma unroll
          for (int tt = 0; tt < 2; ++tt) {
            if (tt >= ph.ntile) break;
            float a[4] = {0.f, 0.f, 0.f, 0.f}, c[4] = {0.f, 0.f, 0.f, 0.f};
            sk_consume(ring, full, empty, cseq, nst, it + tt * 2, act, AST, R, 0, a, c);
            sk_consume(ring, full, empty, cseq, nst, it + tt * 2 + 1, act, AST, R, 768, a, c);
            y[tt][0] = (a[0] + c[0]) + (a[2] + c[2]);  // hi rows + lo rows
            y[tt][1] = (a[1] + c[1]) + (a[3] + c[3]);
          }
          const int n0 = t * 8 * ph.ntile;
          if (ph.kind == SK_QKV) {
            if (g < R) {
              const int col = n0 + t4 * 2;
              float2 v = make_float2(y[0][0], y[0][1]);
              if (col >= 2 * D) {
                v.x += bf(ph.bias[col - 2 * D]);
                v.y += bf(ph.bias[col + 1 - 2 * D]);
              }
              *reinterpret_cast<float2*>(p.qkv + (size_t)g * QKV_LD + col) = v;
            }
          } else if (ph.kind == SK_OPROJ) {
            if (g < R) {
#pragma unroll
              for (int i = 0; i < 2; ++i) {
                const int col = n0 + t4 * 2 + i;
                float xv = __ldcg(p.x + (size_t)g * D + col);
                xv = xv + (y[0][i] + bf(ph.bias[col]));
                p.x[(size_t)g * D + col] = xv;
              }
            }
          } else if (ph.kind == SK_GATEUP) {  // groups 2t (gate) and 2t + 1 (up): same 8 features
            if (g < R) {
#pragma unroll
              for (int i = 0; i < 2; ++i) {
                const int cc = t4 * 2 + i;
                const float gv = y[0][i] + bf(ph.bias[n0 + cc]);
                const float uv = y[1][i] + bf(ph.bias[n0 + 8 + cc]);
                const float sg = gv / (1.f + __expf(-gv));
                split_store(p.hbuf, p.hbuf_lo, (size_t)g * F + t * 8 + cc, sg * uv);
              }
            }
          } else {  // SK_LM
            sk_lm_epilogue(p, y[0], n0, g1, gm, bv, bi);
          }
        }
      }
      it_base += (unsigned)(n * spt);
    }
    if (p.tl && b == 0 && threadIdx.x == 0) p.tl[4 * pi + 2] = gtimer();  // warp 0's own tiles / items done
    const bool final_phase = pi == p.nph - 1;
    if (final_phase) {  // lm_head: the warps' bests -> the block's partial
      if ((lane & 3) == 0 && (lane >> 2) < MAXP) {
        lmv[warp * MAXP + (lane >> 2)] = bv;
        lmi[warp * MAXP + (lane >> 2)] = bi;
      }
      sk_bar();
      const int P = ctl->P;
      if ((int)threadIdx.x < P) {
        float v = lmv[threadIdx.x];
        int i = lmi[threadIdx.x];
        for (int w = 1; w < SK_NW; ++w) argmax_take(lmv[w * MAXP + threadIdx.x], lmi[w * MAXP + threadIdx.x], v, i);
        p.lm_val[threadIdx.x * G + b] = v;
        p.lm_idx[threadIdx.x * G + b] = i;
      }
    }
    sk_bar();
    if (threadIdx.x == 0) {
      if (p.tl && b == 0) p.tl[4 * pi + 3] = gtimer();
      __threadfence();
      const unsigned prev = atomicAdd(p.counter, 1u);
      int last = 0;
      if (final_phase && prev == (unsigned)p.nph * (unsigned)G - 1) {
        __threadfence();
        last = 1;
      }
      flag[0] = last;
    }
    if (final_phase) {
      sk_bar();
      if (flag[0]) {  // every block has arrived: the step's token, the next embedding, the position
        const int P = ctl->P;
        if (p.tl) p.tl[4 * p.nph] = gtimer();
        if (p.tail) {
          if (warp < P) {
            const int bi2 = warp_argmax_partials(p.lm_val + warp * G, p.lm_idx + warp * G, G);
            if (lane == 0) flag[1 + warp] = p.diag ? 0 : ctl->forced ? ctl->forced_tok[warp] : bi2;
          }
          sk_bar();
          emit_tokens(flag + 1, 0, P, ctl, pos, p.wte, p.x, p.stats, p.tokens, p.host_tokens, SK_NW * 32);
          sk_bar();
          if (threadIdx.x == 0) p.dyn->pos = pos + 1;
        }
        if (threadIdx.x == 0) *p.counter = 0;  // no block reads it again in this step
      }
    }
  }
}

}  // namespace cubeforge::cuda::detail
