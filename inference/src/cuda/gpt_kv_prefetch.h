// Which cached keys and values the multi-row fused MLP requests into L2 for the next dual layer's decode attention
// (session 48; gpt_mlp.cuh's kv_prefetch, measurement knob CUBEFORGE_GPT_KVPF), as plain constexpr C++ so that the
// host test (tests/inference/test_kv_prefetch.cpp) checks the ranges the kernel requests against the slots the
// attention reads (gpt_attention.cuh's attn_load_kv).
#pragma once

#if defined(__CUDACC__)
#define CF_KVPF_HD __host__ __device__
#else
#define CF_KVPF_HD
#endif

namespace cubeforge::cuda::detail {

// One range: the keys (or values) of (row, head) rh = r H + h, slots [first, end) of that row's own cache.
struct KvPfRange {
  int rh, first, end;
  bool values;
};

// Range i of R rows x H heads x {keys, values}, in the order last (row, head) first (at 8 rows the attention's last
// blocks are the ones that cannot request their prefix before the qkv ends), keys before values. cur = coff + pos is
// the current slot, which the attention writes itself; rows whose cond slots the attention reads from the shared
// prefix rows (prefix_rows > 0: rows other than 0 and prefix_rows) start at the split (ach keys) that holds slot coff,
// as attn_load_kv does. False past the last range or once the ranges before i hold cap bytes or more (counted at the
// own-slot length of a range: the rows that read the shared prefix, the rest of the ranges).
CF_KVPF_HD constexpr bool kv_prefetch_range(int i, int R, int H, int coff, int pos, int prefix_rows, int ach,
                                            unsigned long long cap, int slot_bytes, KvPfRange& out) {
  const int cur = coff + pos;
  const int own0 = prefix_rows ? (coff / ach) * ach : 0;
  if (i < 0 || i >= R * H * 2) return false;
  if ((unsigned long long)i * (unsigned long long)(cur - own0) * slot_bytes >= cap) return false;
  const int rh = R * H - 1 - i / 2, r = rh / H;
  out.rh = rh;
  out.first = (prefix_rows && r != 0 && r != prefix_rows) ? own0 : 0;
  out.end = cur;
  out.values = (i & 1) != 0;
  return true;
}

}  // namespace cubeforge::cuda::detail
