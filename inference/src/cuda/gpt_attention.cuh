// Decode attention (flash-decoding over the valid prefix): q/k RMSNorm + RoPE, the KV write of the current position,
// split softmax per 32-key block and the first splits' combine (tagged partials) into the hi/lo output rows.
#pragma once
#include "gpt_device.cuh"

namespace cubeforge::cuda::detail {

// ---- decode attention (flash-decoding): q/k RMSNorm + RoPE + KV write + split softmax + last-block combine -------
struct AttnParams {
  const float* qkv;    // [R][QKV_LD]: raw q | raw k | v (+bias), fp32
  const float* qnorm;
  const float* knorm;
  bf16* kc;            // this layer's caches [R][H][T][HD] (rotated keys)
  bf16* vc;
  int T;               // slots per (row, head)
  int coff;            // slot of shape position j is coff + j (s for dual blocks, 0 for the single block)
  int slot0_only;      // reference single-block decode: the query sees slot 0 only
  const float2* rope;  // [positions][64] (cos, sin)
  const Dyn* dyn;
  unsigned long long* tpart;  // [R][H][tstride][HD + 2] split partials tagged with the launch's epoch (tag_pack)
  unsigned* ep;        // [R][H] epoch of the last launch that combined (split 0 writes it)
  bf16* out;           // [R][D] hi part
  bf16* out_lo;        // [R][D] lo part
  int maxs;
  int tstride;         // splits per (row, head) in tpart, the same for every launch (a word belongs to one (r, h))
  int early_trig;      // 1: launch the successor before this kernel's own wait (pdl_early_trigger)
  unsigned long long* tl;  // diagnostics only: timeline stamps (TlStamp) or null
  HashLog hl;              // diagnostics only (CF_DIAG_HASH): output hashes
  int prefix_rows;  // 0: every row reads its own cond slots [0, coff); P > 0 (a shared prefill, prefill_rows.h):
                    // rows [0, P) read row 0's, rows [P, R) row P's, the same bits, so repeated prefixes hit in L2
};
constexpr int ATT_MAXSPLIT = 128;  // splits per (row, head) the combine's shared arrays hold (host-checked)
// o words a combining thread polls per round: attn_combine_one (8) / attn_combine_spread (4: 6 and 8 spill at the 64
// registers there; 16 blocks x 4 cover 64 splits in one round)
#ifndef CF_ATT_TCH_SPREAD
#define CF_ATT_TCH_SPREAD 4
#endif
constexpr int ATT_TCH = 8, ATT_TCH_SPREAD = CF_ATT_TCH_SPREAD;
constexpr unsigned long long ATT_SPIN = 1ull << 24;  // polling rounds of the tagged combine before it traps

__device__ inline float block128_sum(float v, float* red4) {
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red4[threadIdx.x >> 5] = v;
  __syncthreads();
  return red4[0] + red4[1] + red4[2] + red4[3];
}

// RMSNorm (eps 1e-5) then interleaved RoPE, all fp32 (keys are rounded to bf16 only when cached). Thread = dim.
// ss: the block's sum of raw^2 (block128_sum order).
__device__ inline float rms_rope(float raw, float ss, float wnorm, float2 cs) {
  const float y = raw * rsqrtf(__fmaf_rn(ss, 1.f / HD, 1e-5f)) * wnorm;
  const float other = __shfl_xor_sync(0xffffffffu, y, 1);
  float o;
  if ((threadIdx.x & 1) == 0) o = __fsub_rn(__fmul_rn(y, cs.x), __fmul_rn(other, cs.y));
  else o = __fadd_rn(__fmul_rn(other, cs.y), __fmul_rn(y, cs.x));
  return o;
}
__device__ inline float norm_rope(float raw, float wnorm, float2 cs, float* red4) {
  return rms_rope(raw, block128_sum(raw * raw, red4), wnorm, cs);
}
// q and k of the current position in one block reduction (red8: 8 floats): the same sums in the same order as two
// block128_sum calls, one barrier pair instead of two.
__device__ inline void norm_rope_qk(float qraw, float kraw, float wq, float wk, float2 cs, float* red8, float& qo,
                                    float& ko) {
  const float sq = warp_sum(qraw * qraw), sk = warp_sum(kraw * kraw);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    red8[threadIdx.x >> 5] = sq;
    red8[4 + (threadIdx.x >> 5)] = sk;
  }
  __syncthreads();
  qo = rms_rope(qraw, red8[0] + red8[1] + red8[2] + red8[3], wq, cs);
  ko = rms_rope(kraw, red8[4] + red8[5] + red8[6] + red8[7], wk, cs);
}

// This step's constants of a decode attention launch (read before the wait: the position and weights).
struct AttnStep {
  int pos, cur, L, nsplit;
  float2 cs;        // RoPE (cos, sin) of this thread's dimension pair at pos
  float wqn, wkn;   // q / k RMSNorm weights of this thread's dimension
};
// The position and the prefix it gives (cs / wqn / wkn: attn_consts, after the early return of blocks past it).
__device__ __forceinline__ AttnStep attn_step(const AttnParams& p) {
  AttnStep st;
  st.pos = __ldcg(&p.dyn->pos);
  st.cur = p.coff + st.pos;
  st.L = p.slot0_only ? 1 : st.cur + 1;
  st.nsplit = (st.L + ACH - 1) / ACH;
  return st;
}
__device__ __forceinline__ void attn_consts(const AttnParams& p, AttnStep& st) {
  st.cs = p.rope[st.pos * (HD / 2) + threadIdx.x / 2];
  st.wqn = p.qnorm[threadIdx.x];
  st.wkn = p.knorm[threadIdx.x];
}

// A lane's keys and values of one split: four bf16 dimensions of key j0 + 8 warp + kk per entry.
struct KvRegs {
  uint2 kr[AKPW], vr[AKPW];
};
// The cached keys / values of split `split` of (row r, head h) this lane multiplies: keys j0 + 8 warp .. + 7, four
// dimensions each (zero past the prefix and at the current slot, whose values come from this step's qkv).
// FULL: a split before the last (every key inside the prefix, none the current slot): no per-key conditions.
// REMAP: a split wholly inside the cond slots [0, coff) reads them from the row prefix_rows names (AttnParams); the
// split that holds slot coff reads its row's own copies, the same bits (one base address per block: a per-key choice
// of two spilled more at the 8-row kernel's 64 registers). The last split holds the current slot, so never remaps.
template <bool FULL, bool REMAP>
__device__ __forceinline__ void attn_load_kv(const AttnParams& p, const AttnStep& st, int r, int h, int split,
                                             KvRegs& kv) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int j0 = split * ACH;
  const int rr =
      !(FULL && REMAP) || p.prefix_rows == 0 || j0 + ACH > p.coff ? r : r < p.prefix_rows ? 0 : p.prefix_rows;
  const size_t base = (size_t)(rr * H + h) * p.T * HD;
#pragma unroll
  for (int kk = 0; kk < AKPW; ++kk) {
    const int j = j0 + warp * AKPW + kk;
    if (FULL || (j < st.L && j != st.cur)) {
      kv.kr[kk] = __ldcg(reinterpret_cast<const uint2*>(p.kc + base + (size_t)j * HD + lane * 4));
      kv.vr[kk] = __ldcg(reinterpret_cast<const uint2*>(p.vc + base + (size_t)j * HD + lane * 4));
    } else {
      kv.kr[kk] = make_uint2(0, 0);
      kv.vr[kk] = make_uint2(0, 0);
    }
  }
}

// One dimension of the attention output (hi / lo rows) and its hash (diagnostics).
__device__ __forceinline__ void attn_out(const AttnParams& p, int r, int h, int d, float v, int pos) {
  split_store(p.out, p.out_lo, (size_t)r * D + h * HD + d, v);
  unsigned hh = 0;
  hash_addf(hh, v, (1u << 24) + r * D + h * HD + d);
  hash_flush(p.hl, hh, pos);
}

// The combine in split 0's block (tp: the (r, h) partials): thread s polls split s's (m, l), every thread its
// dimension of the first ATT_TCH splits' o, in one loop; then the next ATT_TCH at a time (8: 16 of these 64-bit
// words in flight spill at the 64 registers)
__device__ __forceinline__ void attn_combine_one(const AttnParams& p, const AttnStep& st, int r, int h,
                                                 const unsigned long long* tp, unsigned ep) {
  const int tid = threadIdx.x, nsplit = st.nsplit;
  __shared__ float cm[ATT_MAXSPLIT], cl[ATT_MAXSPLIT];
  constexpr int TC = ATT_TCH;
  float ml[2], ov[TC];
  unsigned pm = tid < nsplit ? 3u : 0u, po = low_bits<TC>(nsplit);
  for (unsigned long long n = 0; pm | po; ++n) {
    if (n > ATT_SPIN) __trap();
    const unsigned wm = pm, wo = po;
    const unsigned gm = tag_try<2>(tp + (size_t)tid * (HD + 2) + HD, 1, wm, ep, ml);
    const unsigned go = tag_try<TC>(tp + tid, HD + 2, wo, ep, ov);
    pm = wm & ~gm;
    po = wo & ~go;
  }
  if (tid < nsplit) {
    cm[tid] = ml[0];
    cl[tid] = ml[1];
  }
  __syncthreads();
  float M = -INFINITY;
  for (int s = 0; s < nsplit; ++s) M = fmaxf(M, cm[s]);
  float Ls = 0.f, O = 0.f;
  for (int s0 = 0; s0 < nsplit; s0 += TC) {
    if (s0 > 0) tag_wait<TC>(tp + (size_t)s0 * (HD + 2) + tid, HD + 2, low_bits<TC>(nsplit - s0), ep, ov, ATT_SPIN);
#pragma unroll
    for (int i = 0; i < TC; ++i)
      if (s0 + i < nsplit) {
        const float f = __expf(cm[s0 + i] - M);
        Ls = __fmaf_rn(cl[s0 + i], f, Ls);
        O = __fmaf_rn(ov[i], f, O);
      }
  }
  attn_out(p, r, h, tid, O / Ls, st.pos);
  if (tid == 0) p.ep[r * H + h] = ep;
}

// The combine spread over the first nc splits' blocks (session 26; one prompt, where the grid is resident at once:
// with more rows the splits run in several waves and the extra combining blocks hold slots the later splits need,
// batch 4 +0.6% / +1.8% measured with the spread at every row count). nc = 1, 2, 4, 8 or 16, the fewest for which
// a thread polls at most ATT_TCH_SPREAD o words per round; block c produces dimensions c DW .. c DW + DW - 1
// (DW = HD / nc). Its thread t polls dimension c DW + t % DW of splits k, k + nc, k + 2 nc, ... (k = t / DW) into
// shared memory, every thread polls split t's (m, l), and the DW threads of k = 0 then sum in split order: the same
// arithmetic and bits as attn_combine_one, whose one block polls every split's 128 dimensions, 8 splits per L2
// round trip (5 rounds at v0.5's longest prefix, 1 here up to 64 splits).
// Session 28: the summing threads' loops unrolled by 8 (their shared-memory loads in flight together; same order,
// same bits): TPOT -0.2% / -0.15% at one prompt.
__device__ __forceinline__ void attn_combine_spread(const AttnParams& p, const AttnStep& st, int r, int h, int split,
                                                    const unsigned long long* tp, unsigned ep) {
  constexpr int TC = ATT_TCH_SPREAD;
  const int tid = threadIdx.x, nsplit = st.nsplit;
  // nc = 1 << lg: the thread's indices by shifts and masks (session 31: runtime divisions by DW and nc were
  // multi-instruction sequences ahead of the first poll)
  const int lg = nsplit <= TC ? 0 : nsplit <= 2 * TC ? 1 : nsplit <= 4 * TC ? 2 : nsplit <= 8 * TC ? 3 : 4;
  const int nc = 1 << lg;
  if (split >= nc) return;
  static_assert(HD == 128, "DW = HD >> lg");
  const int DW = HD >> lg, dl = tid & (DW - 1), k = tid >> (7 - lg), d = split * DW + dl;
  __shared__ float cm[ATT_MAXSPLIT], cl[ATT_MAXSPLIT];
  __shared__ float ovs[TC * HD];  // a round's o values: [split - s0][dimension - split * DW]
  float ml[2];
  unsigned pm = tid < nsplit ? 3u : 0u;
  float M = -INFINITY, Ls = 0.f, O = 0.f;
  for (int s0 = 0; s0 < nsplit; s0 += nc * TC) {
    // this thread's splits of the round: s0 + k + nc i for i < TC, those below nsplit
    const unsigned long long* src = tp + (size_t)(s0 + k) * (HD + 2) + d;
    unsigned po = low_bits<TC>((nsplit - s0 - k + nc - 1) >> lg);  // >= 1, so the shift is the division
    for (unsigned long long n = 0; pm | po; ++n) {
      if (n > ATT_SPIN) __trap();
      const unsigned wm = pm, wo = po;
      const unsigned gm = tag_try<2>(tp + (size_t)tid * (HD + 2) + HD, 1, wm, ep, ml);
      // the o values straight to shared memory (no registers held for them)
      const unsigned go = tag_try_each<TC>(src, (size_t)nc * (HD + 2), wo, ep,
                                           [&](int i, float x) { ovs[(k + nc * i) * DW + dl] = x; });
      pm = wm & ~gm;
      po = wo & ~go;
    }
    if (s0 == 0 && tid < nsplit) {
      cm[tid] = ml[0];
      cl[tid] = ml[1];
    }
    __syncthreads();
    if (tid < DW) {
      if (s0 == 0)
#pragma unroll 8
        for (int s = 0; s < nsplit; ++s) M = fmaxf(M, cm[s]);
      const int s1 = min(nsplit, s0 + nc * TC);
#pragma unroll 8
      for (int s = s0; s < s1; ++s) {
        const float f = __expf(cm[s] - M);
        Ls = __fmaf_rn(cl[s], f, Ls);
        O = __fmaf_rn(ovs[(s - s0) * DW + dl], f, O);
      }
    }
    if (s0 + nc * TC < nsplit) __syncthreads();  // the next round overwrites ovs
  }
  if (tid < DW) attn_out(p, r, h, d, O / Ls, st.pos);
  if (split == 0 && tid == 0) p.ep[r * H + h] = ep;
}

// One split (32 keys) of (row r, head h), its keys and values already in registers: q (and, in the split holding the
// current slot, k and v) normalised and rotated, the KV write of the current slot, the split's softmax partial, and
// in the first splits the combine into the hi/lo output row. The arithmetic is written out with _rn
// intrinsics (no compiler contraction), so every kernel that runs it gives the same bits.
// ep: this launch's epoch for (r, h) (attn_decode_kernel). SPREAD: attn_combine_spread, else attn_combine_one.
// The (r, h) partials of this launch (split s at + s (HD + 2)).
__device__ __forceinline__ unsigned long long* attn_partials(const AttnParams& p, int r, int h) {
  return p.tpart + (size_t)(r * H + h) * p.tstride * (HD + 2);
}
// attn_split_partial's shared memory: one instance per kernel, whichever instantiations it runs.
struct AttnSplitSmem {
  float qs[HD], kn[HD], vn[HD], red4[8], wm[4], wl[4], ow[4][HD];
};
__device__ __forceinline__ AttnSplitSmem& attn_split_smem() {
  __shared__ __align__(16) AttnSplitSmem s;
  return s;
}
// attn_split_partial: all of it but the combine; true where it wrote the output row itself (one split).
// FULL (session 35): a split before the last, whose keys are all inside the prefix and none the current slot: the
// per-key conditions (prefix end, current slot) drop out; the same arithmetic on the same values.
template <bool FULL>
__device__ __forceinline__ bool attn_split_partial(const AttnParams& p, const AttnStep& st, int r, int h, int split,
                                                   const KvRegs& kv, unsigned ep) {
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int cur = st.cur, L = st.L, nsplit = st.nsplit, j0 = split * ACH;
  const size_t base = (size_t)(r * H + h) * p.T * HD;
  AttnSplitSmem& sm = attn_split_smem();
  float *qs = sm.qs, *kn = sm.kn, *vn = sm.vn, *red4 = sm.red4, *wm = sm.wm, *wl = sm.wl;
  auto& ow = sm.ow;
  const float* qrow = p.qkv + (size_t)r * QKV_LD + h * HD;
  const bool has_cur = !FULL && cur < L && cur >= j0 && cur < j0 + ACH;
  const float qraw = __ldcg(qrow + tid);
  // session 8: the block holding the current slot requests q, k and v together and normalises q and k in one
  // reduction (block-uniform branch)
  if (has_cur) {
    const float kraw = __ldcg(qrow + D + tid);
    const float vraw = __ldcg(qrow + 2 * D + tid);
    float qo, kq;
    norm_rope_qk(qraw, kraw, st.wqn, st.wkn, st.cs, red4, qo, kq);
    qs[tid] = qo;
    // the current key/value as cached (bf16), so every step sees the same values for this slot
    const bf16 kb = __float2bfloat16_rn(kq);
    const bf16 vv = __float2bfloat16_rn(vraw);
    kn[tid] = bf(kb);
    vn[tid] = bf(vv);
    p.kc[base + (size_t)cur * HD + tid] = kb;
    p.vc[base + (size_t)cur * HD + tid] = vv;
    unsigned hh = 0;  // output hash (diagnostics): the cached key and value
    hash_add(hh, __bfloat16_as_ushort(kb) | ((unsigned)__bfloat16_as_ushort(vv) << 16), (r * H + h) * HD + tid);
    hash_flush(p.hl, hh, st.pos);
  } else {
    qs[tid] = norm_rope(qraw, st.wqn, st.cs, red4);
  }
  __syncthreads();
  const float4 q4 = *reinterpret_cast<const float4*>(qs + lane * 4);
  constexpr float scale = 0.08838834764831845f;  // 1/sqrt(128)
  float sc[AKPW];
  float mloc = -INFINITY;
#pragma unroll
  for (int kk = 0; kk < AKPW; ++kk) {
    const int j = j0 + warp * AKPW + kk;
    float k0, k1, k2, k3;
    if (j == cur && has_cur) {
      k0 = kn[lane * 4];
      k1 = kn[lane * 4 + 1];
      k2 = kn[lane * 4 + 2];
      k3 = kn[lane * 4 + 3];
    } else {
      const uint2 kw = kv.kr[kk];
      k0 = bf_lo(kw.x);
      k1 = bf_hi(kw.x);
      k2 = bf_lo(kw.y);
      k3 = bf_hi(kw.y);
    }
    float d = __fmaf_rn(q4.w, k3, __fmaf_rn(q4.z, k2, __fmaf_rn(q4.x, k0, __fmul_rn(q4.y, k1))));
    d = warp_sum(d);
    sc[kk] = (FULL || j < L) ? __fmul_rn(d, scale) : -INFINITY;
    mloc = fmaxf(mloc, sc[kk]);
  }
  if (lane == 0) wm[warp] = mloc;
  __syncthreads();
  const float m = fmaxf(fmaxf(wm[0], wm[1]), fmaxf(wm[2], wm[3]));
  float l = 0.f, o0 = 0.f, o1 = 0.f, o2 = 0.f, o3 = 0.f;
#pragma unroll
  for (int kk = 0; kk < AKPW; ++kk) {
    const int j = j0 + warp * AKPW + kk;
    const float pj = (FULL || j < L) ? __expf(sc[kk] - m) : 0.f;
    float v0, v1, v2, v3;
    if (j == cur && has_cur) {
      v0 = vn[lane * 4];
      v1 = vn[lane * 4 + 1];
      v2 = vn[lane * 4 + 2];
      v3 = vn[lane * 4 + 3];
    } else {
      const uint2 vw = kv.vr[kk];
      v0 = bf_lo(vw.x);
      v1 = bf_hi(vw.x);
      v2 = bf_lo(vw.y);
      v3 = bf_hi(vw.y);
    }
    l += pj;
    o0 = __fmaf_rn(pj, v0, o0);
    o1 = __fmaf_rn(pj, v1, o1);
    o2 = __fmaf_rn(pj, v2, o2);
    o3 = __fmaf_rn(pj, v3, o3);
  }
  *reinterpret_cast<float4*>(&ow[warp][lane * 4]) = make_float4(o0, o1, o2, o3);
  if (lane == 0) wl[warp] = l;
  __syncthreads();
  const float od = ow[0][tid] + ow[1][tid] + ow[2][tid] + ow[3][tid];
  const float lsum = wl[0] + wl[1] + wl[2] + wl[3];
  if (nsplit == 1) {
    attn_out(p, r, h, tid, od / lsum, st.pos);
    return true;
  }
  // the split's partial (o, m, l) as words tagged with this launch's epoch; the combining blocks take them as they
  // land, in split order (max, then the rescaled sums; session 7's order), with no fence, arrival count or reset
  // (session 21)
  unsigned long long* mine = attn_partials(p, r, h) + (size_t)split * (HD + 2);
  st_relaxed_u64(mine + tid, tag_pack(od, ep));
  if (tid == 0) st_relaxed_v2_u64(mine + HD, tag_pack(m, ep), tag_pack(lsum, ep));
  return false;
}
template <bool SPREAD, bool FULL>
__device__ __forceinline__ void attn_split(const AttnParams& p, const AttnStep& st, int r, int h, int split,
                                           const KvRegs& kv, unsigned ep) {
  if (attn_split_partial<FULL>(p, st, r, h, split, kv, ep)) return;
  if constexpr (SPREAD) attn_combine_spread(p, st, r, h, split, attn_partials(p, r, h), ep);
  else if (split == 0) attn_combine_one(p, st, r, h, attn_partials(p, r, h), ep);
}

// One block per (split, head, row); blocks past the prefix return at once (session 15 sized the grid to the prefix
// per graph instead: slower at batch 1, see docs/cuda-gpt.md). Its keys and values are requested before
// griddepcontrol.wait (earlier steps wrote them).
// This launch's epoch for (r, h) is one past the last combining launch's (which completed before this one started:
// every kernel between them waited for its predecessor).
// REMAP (session 38): the splits wholly inside the cond slots read them from the rows p.prefix_rows names (a shared
// prefill); a kernel of its own because the remap costs the 8-row kernel a spilled register (4 bytes) that rows with
// their own prefixes should not pay.
template <bool SPREAD, bool REMAP>
__global__ void __launch_bounds__(128, 8) attn_decode_kernel(const AttnParams p) {
  const int split = blockIdx.x, h = blockIdx.y, r = blockIdx.z;
  const TlStamp tls(p.tl);
  pdl_early_trigger(p.early_trig);
  // Everything read before pdl_wait() was written at least two kernels back (position, earlier KV slots, weights).
  AttnStep st = attn_step(p);
  if (split >= st.nsplit) return;
  attn_consts(p, st);
  const unsigned ep = __ldcg(p.ep + r * H + h) + 1u;
  KvRegs kv;
  if (split < st.nsplit - 1) {  // block-uniform: the splits before the last take the condition-free path
    attn_load_kv<true, REMAP>(p, st, r, h, split, kv);
    pdl_handoff(tls);
    attn_split<SPREAD, true>(p, st, r, h, split, kv, ep);
  } else {
    attn_load_kv<false, false>(p, st, r, h, split, kv);
    pdl_handoff(tls);
    attn_split<SPREAD, false>(p, st, r, h, split, kv, ep);
  }
}

}  // namespace cubeforge::cuda::detail
