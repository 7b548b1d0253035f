// Device building blocks shared by the CUDA GPT kernels: the model's fixed widths, the host-written control block and
// the kernel-written position, weight loads with an L2 policy, bulk copies on mbarriers, the per-kernel timeline
// stamps, the PDL handoff, token emission (next embedding + stats + token outputs), hi/lo activation stores,
// cross-block arrivals and the argmax combine rule.
#pragma once
#include "cuda_common.cuh"

namespace cubeforge::cuda::detail {

constexpr int D = 1536, H = 12, HD = 128, F = 6144, NSLOT = D / 8, QKV_LD = 3 * D;
constexpr int ACH = 32;            // keys per attention split block
constexpr int AKPW = ACH / 4;      // keys per warp (4 warps)
constexpr int MAXP = 8;            // variations (prompts) per batch
constexpr int MAXR = 2 * MAXP;     // rows

// Written by the host before a generate / teacher-forced step (never by kernels).
struct Ctl {
  int P;              // variations
  int cfg;            // 1: rows = 2P (cond rows then uncond rows)
  int N;              // tokens per object
  int vocab;          // sampled range [0, vocab)
  int forced;         // teacher forcing: feed forced_tok instead of the chosen token
  int write_guided;   // lm_head writes the guided logits (top-p needs them)
  int write_raw;      // lm_head writes the raw bf16 logits
  int pad0;
  double guidance;
  float top_p;
  float pad1;
  unsigned long long seed;
  int forced_tok[MAXP];
};
// Written by kernels: the position (decode step index) and the last-block counters.
struct Dyn {
  int pos;
  unsigned cnt_lm;
  unsigned cnt_topp;
  unsigned pad;
};

enum Epi { EPI_QKV = 0, EPI_RESID = 1, EPI_SWIGLU = 2, EPI_LMHEAD = 3 };

// ---- weight loads -------------------------------------------------------------------------------------------------
// Weight load with an L2 cache policy (createpolicy): evict_first, the weights are dead once read in a step.
__device__ __forceinline__ uint4 ld_weight_hint(const void* p, uint64_t pol) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p), "l"(pol));
  return r;
}
// The block whose weights block b streams in the ring kernels (fused MLP, lm_head): itself, or in the diagnostic build
// (CF_DIAG_L2W) with variant bit 19 (wmask != 0) one of the first 4 blocks', so the weights come from L2.
__device__ __forceinline__ int ring_src_block(unsigned long long wmask, int b) {
#ifdef CF_DIAG_L2W
  return wmask ? (b & 3) : b;
#else
  (void)wmask;
  return b;
#endif
}
__device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t pol = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#ifdef CF_DIAG_L2W  // diagnostic build (variant bit 19 with the fused kernels): the weights' small windows stay in L2
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
#else
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#endif
#endif
  return pol;
}

// ---- bulk copies (the copy engine, no registers) completing on shared-memory mbarriers ---------------------------
// Used by the one-round GEMVs' shared-memory weight items and the fused MLP's ring (gpt_mlp.cuh).
__device__ __forceinline__ uint32_t smem_u32(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
// Global -> shared bulk copy (bytes % 16 == 0, both addresses 16-byte aligned), completing on an mbarrier.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}
// The same with an L2 cache policy (createpolicy), e.g. evict_first for weights read once per step.
__device__ __forceinline__ void bulk_g2s_hint(void* dst, const void* src, unsigned bytes, uint64_t* bar, uint64_t pol) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar)), "l"(pol)
      : "memory");
}

// A consumer warp frees a ring slot it has read: its generic-proxy reads are ordered before the bulk copies (async
// proxy) that will refill the slot by a cross-proxy fence in every lane, then one arrival per warp.
__device__ __forceinline__ void ring_release(uint64_t* empty) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncwarp();
  if ((threadIdx.x & 31) == 0) mbar_arrive(empty);
}

// A ring stage's slot (stage mod S) and the parity of its fill (stage / S, odd or even), advanced one stage at a time
// (session 31: the runtime divisions by S they replace are multi-instruction sequences on every stage's path).
struct RingPos {
  int slot;
  unsigned phase;
  __device__ __forceinline__ explicit RingPos(int stage = 0, int S = 1) : slot(stage % S), phase((stage / S) & 1) {}
  __device__ __forceinline__ void next(int S) {
    if (++slot == S) {
      slot = 0;
      phase ^= 1u;
    }
  }
};
// A consumer warp's CPS weight fragments of the ring stage at rp (slot rp.slot of slot_bytes; the fused MLP and the
// ring lm_head): waits for the stage's bulk copies, reads the lane's 16 bytes of each of the warp's chunks at
// warp_off, frees the slot (one arrival per consumer warp) once every lane holds them, and moves rp to the next stage.
template <int CPS>
__device__ __forceinline__ void ring_take(uint64_t* full, uint64_t* empty, const unsigned char* ring, int slot_bytes,
                                          RingPos& rp, int S, size_t warp_off, uint4 (&wb)[CPS]) {
  const int lane = threadIdx.x & 31;
  mbar_wait(&full[rp.slot], rp.phase);
  const uint4* ws = reinterpret_cast<const uint4*>(ring + (size_t)rp.slot * slot_bytes + warp_off);
#pragma unroll
  for (int c = 0; c < CPS; ++c) wb[c] = ws[c * 32 + lane];
  ring_release(&empty[rp.slot]);
  rp.next(S);
}

// The producer's side of a ring: stages i0 .. n - 1 requested in order through issue(i, slot), each once its slot is
// free (stage i >= S waits for the consumers' release of stage i - S).
template <typename Issue>
__device__ __forceinline__ void ring_fill(uint64_t* empty, int S, int i0, int n, Issue&& issue) {
  RingPos rp(i0, S);
  for (int i = i0; i < n; ++i, rp.next(S)) {
    if (i >= S) mbar_wait(&empty[rp.slot], rp.phase ^ 1u);
    issue(i, rp.slot);
  }
}

// ---- timeline diagnostics (EngineOptions::variant bit 21) ---------------------------------------------------------
// Per kernel three %globaltimer stamps (ns), all kept by atomicMin: the earliest block start, the earliest return
// from griddepcontrol.wait (= when the predecessor's results became visible) and the latest block end (stored as ~t).
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {  // the SM this block runs on (phase stamps: which blocks shared an SM)
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
struct TlStamp {
  unsigned long long* t;
  __device__ explicit TlStamp(unsigned long long* tl) : t(tl) {
    if (t && threadIdx.x == 0) atomicMin(t, gtimer());
  }
  __device__ void waited() const {
    if (t && threadIdx.x == 0) atomicMin(t + 1, gtimer());
  }
  __device__ ~TlStamp() {
    if (t && threadIdx.x == 0) atomicMin(t + 2, ~gtimer());
  }
};

// ---- output hashes (diagnostics: built with -DCF_DIAG_HASH, on with EngineOptions::variant bit 24) -------------
// One word per (position, kernel of the step): the XOR of a mixed hash of every (index, value) the kernel's blocks
// write, so two runs' logs name the first kernel whose outputs differ, whatever order its blocks ran in. Without
// CF_DIAG_HASH the helpers compile to nothing (the measured kernels are unchanged).
constexpr int kHashK = 128;   // kernels per step the log holds
constexpr int kHashSub = 8;   // words per kernel: 0 its outputs, 1.. stages inside it (the fused MLP's)
struct HashLog {
  unsigned* slot;    // this kernel's words of the [N][kHashK][kHashSub] log, or null
  const int* pos;    // the step's position (Dyn::pos; read after the wait)
};
// Word `sub` of the kernel's entry at step pos (pos < 0: the current step, read from hl.pos).
__device__ __forceinline__ unsigned* hash_word(const HashLog& hl, int pos, int sub) {
  if (pos < 0) pos = __ldcg(hl.pos);
  return hl.slot + (size_t)pos * kHashK * kHashSub + sub;
}
__device__ __forceinline__ void hash_add(unsigned& h, unsigned bits, unsigned idx) {
#ifdef CF_DIAG_HASH
  unsigned v = bits ^ (idx * 0x9E3779B9u);
  v ^= v >> 16;
  v *= 0x7feb352du;
  v ^= v >> 15;
  v *= 0x846ca68bu;
  v ^= v >> 16;
  h ^= v;
#endif
}
__device__ __forceinline__ void hash_addf(unsigned& h, float v, unsigned idx) { hash_add(h, __float_as_uint(v), idx); }
// The calling threads' words XORed into word `sub` of the kernel's log entry (pos < 0: read it from hl.pos).
__device__ __forceinline__ void hash_flush(const HashLog& hl, unsigned h, int pos = -1, int sub = 0) {
#ifdef CF_DIAG_HASH
  if (!hl.slot) return;
  const unsigned m = __activemask();
  h = __reduce_xor_sync(m, h);
  if ((int)(threadIdx.x & 31) == __ffs(m) - 1 && h) atomicXor(hash_word(hl, pos, sub), h);
#endif
}

// Stage hashes summed per block first (one global atomic per word and block): full warps XOR theirs into shared
// words hsm[sub], then after a barrier thread 0 stores hsm[lo..hi) (same-address atomics from every warp of 128
// blocks cost microseconds and hid session 21's bug).
__device__ __forceinline__ void hash_to_block(unsigned* hsm, int sub, unsigned h) {
#ifdef CF_DIAG_HASH
  h = __reduce_xor_sync(0xffffffffu, h);
  if ((threadIdx.x & 31) == 0 && h) atomicXor(hsm + sub, h);
#endif
}
__device__ __forceinline__ void hash_block_flush(const HashLog& hl, const unsigned* hsm, int lo, int hi) {
#ifdef CF_DIAG_HASH
  if (threadIdx.x != 0 || !hl.slot) return;
  unsigned* w = hash_word(hl, -1, 0);
  for (int sub = lo; sub < hi; ++sub)
    if (hsm[sub]) atomicXor(w + sub, hsm[sub]);
#endif
}

// A decode kernel's handoff point: everything before it may only read what was written at least two kernels back
// (weights, earlier KV slots); it waits for the predecessor's results, stamps the timeline and lets the successor
// launch (its blocks start as soon as resources free up and request their own weights).
__device__ __forceinline__ void pdl_handoff(const TlStamp& tls) {
  pdl_wait();
  tls.waited();
  pdl_trigger();
}
// Session 24 (CUBEFORGE_GPT_EARLY_TRIG): the successor launched at this kernel's start instead of after its wait, so
// its blocks become resident (and request their weights) while this kernel still waits for its own predecessor. Only
// for kernels whose successor reads nothing but weights before its wait (attention -> o-proj, o-proj -> MLP): a
// successor's wait still returns only when this kernel has completed, and this kernel completes only after its own
// wait, so every later kernel still sees all earlier ones complete.
__device__ __forceinline__ void pdl_early_trigger(int on) {
  if (on) pdl_trigger();
}

// ---- token emission: next embedding (both CFG rows), its LN stats, token outputs ------------------------------
__device__ inline void emit_tokens(const int* tok, int p_begin, int p_end, const Ctl* ctl, int pos, const float* wte,
                                   float* x, float* stats, int* tokens, int* host_tokens, int nthr) {
  const int P = ctl->P, cfg = ctl->cfg;
  const int np = p_end - p_begin;
  for (int v = threadIdx.x; v < np * (D / 4); v += nthr) {
    const int p = p_begin + v / (D / 4), k4 = (v % (D / 4)) * 4;
    const float4 e = *reinterpret_cast<const float4*>(wte + (size_t)tok[p] * D + k4);
    *reinterpret_cast<float4*>(x + (size_t)p * D + k4) = e;
    if (cfg) *reinterpret_cast<float4*>(x + (size_t)(P + p) * D + k4) = e;
  }
  for (int v = threadIdx.x; v < np * NSLOT; v += nthr) {
    const int p = p_begin + v / NSLOT, sl = v % NSLOT;
    const float* e = wte + (size_t)tok[p] * D + sl * 8;
    float s = 0.f, q = 0.f;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      s += e[c];
      q += e[c] * e[c];
    }
    reinterpret_cast<float2*>(stats)[(size_t)p * NSLOT + sl] = make_float2(s, q);
    if (cfg) reinterpret_cast<float2*>(stats)[(size_t)(P + p) * NSLOT + sl] = make_float2(s, q);
  }
  if ((int)threadIdx.x < np) {
    const int p = p_begin + threadIdx.x;
    tokens[p * ctl->N + pos] = tok[p];
    if (host_tokens) reinterpret_cast<volatile int*>(host_tokens)[p * ctl->N + pos] = tok[p];
  }
}

// LayerNorm partial stats of 8 consecutive residual values (sum, sum of squares; fp32, in order): what a producer
// of the residual stream writes per 8-column slot for the next GEMV's LN prologue.
__device__ __forceinline__ float2 ln_stats8(const float* x) {
  float s = 0.f, q = 0.f;
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    s += x[c];
    q += x[c] * x[c];
  }
  return make_float2(s, q);
}

// fp32 activation -> bf16 hi + bf16 lo (v - hi, rounded): hi + lo carries ~16 mantissa bits, so a GEMV that runs
// its MMA on both parts sees the fp32 activation up to ~2^-17 relative instead of bf16's 2^-9.
__device__ __forceinline__ void split_store(bf16* hi, bf16* lo, size_t i, float v) {
  const bf16 h = __float2bfloat16_rn(v);
  hi[i] = h;
  lo[i] = __float2bfloat16_rn(v - __bfloat162float(h));
}

// A 128-byte line into L2 (no registers, nothing waits for it).
__device__ __forceinline__ void prefetch_l2(const void* ptr) { asm volatile("prefetch.global.L2 [%0];" ::"l"(ptr)); }

// Cross-block arrival (one thread, after a block barrier that orders the block's partial writes before its fence,
// which is cumulative): makes the block's writes visible to the block that arrives last, adds 1 to *cnt and returns
// the old count. arrival_acquire(): the last arriver's view of every other block's writes (then a block barrier
// before the other threads read them). Session 10 measured fence.acq_rel.gpu and atom.add.acq_rel.gpu in place of
// membar.gl + a relaxed atomic: TPOT equal within 0.1% (docs/cuda-gpt-notes.md).
__device__ __forceinline__ void arrival_release() { __threadfence(); }
__device__ __forceinline__ void arrival_acquire() { __threadfence(); }
__device__ __forceinline__ unsigned arrive(unsigned* cnt) {
  arrival_release();
  return atomicAdd(cnt, 1u);
}

// Tagged partials (the fused MLP's one-prompt sum): a value and the launch's epoch in one 64-bit word, written and
// read with single-copy-atomic 64-bit accesses, so a reader that sees the epoch sees the value with it: no fence on
// the writer's side and no arrival count before the read (the scheme of NCCL's LL protocol, with 64-bit words).
__device__ __forceinline__ unsigned long long tag_pack(float v, unsigned epoch) {
  return ((unsigned long long)epoch << 32) | __float_as_uint(v);
}
__device__ __forceinline__ void st_relaxed_v2_u64(unsigned long long* p, unsigned long long a, unsigned long long b) {
  asm volatile("st.relaxed.gpu.global.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
__device__ __forceinline__ void st_relaxed_u64(unsigned long long* p, unsigned long long a) {
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(a) : "memory");
}
__device__ __forceinline__ unsigned long long ld_acquire_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// One polling round over the tagged words base[i * stride] with i in `want` (i < N): sink(i, value) for each that
// carries the epoch, and their mask is returned. Every load of the round is issued before any is checked.
template <int N, class Sink>
__device__ __forceinline__ unsigned tag_try_each(const unsigned long long* base, size_t stride, unsigned want,
                                                 unsigned ep, Sink&& sink) {
  unsigned long long w[N];
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (want >> i & 1u) w[i] = ld_relaxed_u64(base + i * stride);
  unsigned got = 0;
#pragma unroll
  for (int i = 0; i < N; ++i)
    if ((want >> i & 1u) && (unsigned)(w[i] >> 32) == ep) {
      sink(i, __uint_as_float((unsigned)w[i]));
      got |= 1u << i;
    }
  return got;
}
// tag_try_each with the values going to v[i]
template <int N>
__device__ __forceinline__ unsigned tag_try(const unsigned long long* base, size_t stride, unsigned want, unsigned ep,
                                            float (&v)[N]) {
  return tag_try_each<N>(base, stride, want, ep, [&](int i, float x) { v[i] = x; });
}
// The mask of the first n of N bits (n <= 0: none)
template <int N>
__device__ __forceinline__ unsigned low_bits(int n) {
  return n <= 0 ? 0u : n >= N ? (N >= 32 ? ~0u : (1u << N) - 1u) : (1u << n) - 1u;
}
// Rounds of tag_try until every word in `want` carries the epoch (a writer that never comes: trap after spin_limit).
template <int N>
__device__ __forceinline__ void tag_wait(const unsigned long long* base, size_t stride, unsigned want, unsigned ep,
                                         float (&v)[N], unsigned long long spin_limit) {
  for (unsigned long long n = 0; want; ++n) {
    if (n > spin_limit) __trap();
    want &= ~tag_try<N>(base, stride, want, ep, v);
  }
}

// The argmax rule of the lm_head tails: (v, i) replaces (bv, bi) if larger, or equal with a smaller index.
__device__ __forceinline__ void argmax_take(float v, int i, float& bv, int& bi) {
  if (v > bv || (v == bv && i < bi)) {
    bv = v;
    bi = i;
  }
}

// Index of the best of n argmax partials (values vals[0..n), indices idx[0..n), written by other blocks: read from
// L2) by one warp: the larger value, then the smaller index. Every lane returns it.
__device__ __forceinline__ int warp_argmax_partials(const float* vals, const int* idx, int n) {
  float best = -INFINITY;
  int bi = 0x7fffffff;
  for (int b = threadIdx.x & 31; b < n; b += 32) argmax_take(__ldcg(vals + b), __ldcg(idx + b), best, bi);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    argmax_take(__shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, bi, o), best, bi);
  return bi;
}

// A reduction over a block of NTHR threads: within each warp (xor shuffles, as warp_sum / warp_max), then the warps'
// results in order starting from init; sh holds NTHR / 32 floats.
template <int NTHR, class Op>
__device__ __forceinline__ float block_reduce_f(float v, float* sh, float init, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = init;
#pragma unroll
  for (int i = 0; i < NTHR / 32; ++i) s = op(s, sh[i]);
  return s;
}
template <int NTHR>
__device__ inline float block_sum_f(float v, float* sh) {
  return block_reduce_f<NTHR>(v, sh, 0.f, [](float a, float b) { return a + b; });
}
template <int NTHR>
__device__ inline float block_max_f(float v, float* sh) {
  return block_reduce_f<NTHR>(v, sh, -INFINITY, [](float a, float b) { return fmaxf(a, b); });
}

}  // namespace cubeforge::cuda::detail
