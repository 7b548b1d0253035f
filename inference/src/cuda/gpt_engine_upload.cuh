// CudaGptEngine::Impl's device memory: the weight arena (layout, upload and conversion of every tensor: load) and
// the decode and prefill buffers with the kernels' shared-memory limits (alloc_buffers).
// Included once, by cuda_gpt_engine.cu (the engine is one translation unit: see there).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "gpt_engine_impl.cuh"

namespace cubeforge::cuda {

void CudaGptEngine::Impl::load(const GptWeightSource& src) {
  // Plan the arena (two passes: count, then carve).
  char* arena = nullptr;
  size_t used = 0;
  auto carve = [&](size_t bytes) -> void* {
    used = (used + 255) & ~size_t(255);
    void* p = arena ? arena + used : nullptr;
    used += bytes;
    return p;
  };
  auto carve_stream = [&](StreamW& w) {  // this order and these sizes place every weight of the arena
    w.qkv = (bf16*)carve((size_t)3 * D * D * 2);
    w.vb = (bf16*)carve(D * 2);
    w.qn = (float*)carve(HD * 4);
    w.kn = (float*)carve(HD * 4);
    w.o = (bf16*)carve((size_t)D * D * 2);
    w.ob = (bf16*)carve(D * 2);
    w.gu = (bf16*)carve((size_t)2 * F * D * 2);
    w.gub = (bf16*)carve(2 * F * 2);
    w.dn = (bf16*)carve((size_t)D * F * 2);
    w.dnb = (bf16*)carve(D * 2);
  };
  auto plan = [&]() {
    used = 0;
    layers.assign(L, LayerW{});
    for (int l = 0; l < L; ++l) {
      LayerW& w = layers[l];
      w.cond_pre_only = (l == L - 1);
      carve_stream(w.x);
      if (!w.cond_pre_only) {
        carve_stream(w.c);
      } else {
        w.c.qkv = (bf16*)carve((size_t)2 * D * D * 2);
        w.c.vb = (bf16*)carve(2 * D * 2);
        w.c.kn = (float*)carve(HD * 4);
      }
    }
    carve_stream(single);
    lm = (bf16*)carve((size_t)Vs * D * 2);
    wte = (float*)carve((size_t)V * D * 4);
  };
  plan();
  const size_t arena_bytes = used;
  {
    size_t fr = 0, tot = 0;
    CF_CUDA(cudaMemGetInfo(&fr, &tot));
    const size_t need = arena_bytes + ((size_t)256 << 20);
    if (need > fr)
      throw cubeforge::Error("CUDA GPT: the weights need " + std::to_string(arena_bytes >> 20) + " MiB but only " +
                             std::to_string(fr >> 20) + " MiB of " + std::to_string(tot >> 20) +
                             " MiB are free on " + dev_name);
  }
  arena = dalloc<char>(arena_bytes);
  weights_bytes = arena_bytes;
  plan();

  float* staging = nullptr;
  CF_CUDA(cudaMalloc(&staging, (size_t)V * D * 4));
  struct Free {
    float* p;
    ~Free() { cudaFree(p); }
  } free_staging{staging};
  auto fetch = [&](const std::string& name, const std::vector<int64_t>& shape) {
    std::vector<float> v = src.get(name, shape);
    size_t n = 1;
    for (auto d : shape) n *= (size_t)d;
    if (v.size() != n)
      throw cubeforge::Error("CUDA GPT: tensor " + name + " has " + std::to_string(v.size()) + " values, expected " +
                             std::to_string(n));
    for (float f : v)
      if (!std::isfinite(f)) throw cubeforge::Error("CUDA GPT: tensor " + name + " holds a non-finite value");
    return v;
  };
  // Decode-only matrices (x stream, single block, lm_head) take the blocked GEMV layout (gemv_w_off; variant bit 3:
  // row-major); the cond-stream matrices stay row-major for cuBLAS.
  int blocked_now = 0;
  auto up = [&](bf16* dst, const std::string& name, std::vector<int64_t> shape, int mode = 0, long rows_used = -1) {
    std::vector<float> v = fetch(name, shape);
    const long rows = rows_used >= 0 ? rows_used : (long)shape[0];
    const long cols = shape.size() > 1 ? (long)shape[1] : 1;
    // Stream-ordered copy: a plain cudaMemcpy from pageable memory can return before its DMA has landed, and
    // this (non-blocking) stream would not wait for it.
    CF_CUDA(cudaMemcpyAsync(staging, v.data(), (size_t)rows * cols * 4, cudaMemcpyHostToDevice, stream));
    if (blocked_now == 2)  // the fused MLP's down-proj (hidden-slice layout)
      convert_mlp_down_kernel<<<1024, 256, 0, stream>>>(staging, dst);
    else
      convert_kernel<<<1024, 256, 0, stream>>>(staging, dst, rows, cols, mode, blocked_now);
    CF_CUDA(cudaGetLastError());
    CF_CUDA(cudaStreamSynchronize(stream));
  };
  auto bias = [&](bf16* dst, const std::string& name, int64_t n, int mode = 0) {
    if (cfg.bias) {
      up(dst, name, {n}, mode);
    } else {
      CF_CUDA(cudaMemsetAsync(dst, 0, n * 2, stream));
    }
  };
  auto f32 = [&](float* dst, const std::string& name, std::vector<int64_t> shape) {
    std::vector<float> v = fetch(name, shape);
    CF_CUDA(cudaMemcpyAsync(dst, v.data(), v.size() * 4, cudaMemcpyHostToDevice, stream));
    CF_CUDA(cudaStreamSynchronize(stream));
  };
  // One stream (x, c or single) under the caller's blocked_now: attention pre-projections, c_proj, MLP.
  auto upload_stream = [&](const StreamW& w, const std::string& pre, const std::string& proj,
                           const std::string& mlp) {
    up(w.qkv, pre + "c_qk.weight", {2 * D, D});
    up(w.qkv + (size_t)2 * D * D, pre + "c_v.weight", {D, D});  // blocked: 8-row groups, so the offset still holds
    bias(w.vb, pre + "c_v.bias", D);
    f32(w.qn, pre + "q_norm.weight", {HD});
    f32(w.kn, pre + "k_norm.weight", {HD});
    up(w.o, proj + "weight", {D, D});
    bias(w.ob, proj + "bias", D);
    up(w.gu, mlp + "gate_proj.weight", {F, D}, 1);
    up(w.gu, mlp + "up_proj.weight", {F, D}, 2);
    bias(w.gub, mlp + "gate_proj.bias", F, 1);
    bias(w.gub, mlp + "up_proj.bias", F, 2);
    const int keep = blocked_now;
    if (blocked_now && mlp_on) blocked_now = 2;
    up(w.dn, mlp + "down_proj.weight", {D, F});
    blocked_now = keep;
    bias(w.dnb, mlp + "down_proj.bias", D);
  };
  for (int l = 0; l < L; ++l) {
    LayerW& w = layers[l];
    const std::string b = "transformer.dual_blocks." + std::to_string(l) + ".";
    blocked_now = blocked;
    upload_stream(w.x, b + "attn.pre_x.", b + "post_1.c_proj.", b + "post_1.mlp.");
    blocked_now = 0;
    if (!w.cond_pre_only) {
      upload_stream(w.c, b + "attn.pre_c.", b + "post_2.c_proj.", b + "post_2.mlp.");
    } else {
      up(w.c.qkv, b + "attn.pre_c.c_k.weight", {D, D});
      up(w.c.qkv + (size_t)D * D, b + "attn.pre_c.c_v.weight", {D, D});
      bias(w.c.vb, b + "attn.pre_c.c_k.bias", D);
      bias(w.c.vb + D, b + "attn.pre_c.c_v.bias", D);
      f32(w.c.kn, b + "attn.pre_c.k_norm.weight", {HD});
    }
  }
  blocked_now = blocked;
  const std::string sb = "transformer.single_blocks.0.";
  upload_stream(single, sb + "attn.", sb + "attn.c_proj.", sb + "mlp.");
  up(lm, "lm_head.weight", {V, D}, 0, Vs);
  blocked_now = 0;
  f32(wte, "transformer.wte.weight", {V, D});
}

void CudaGptEngine::Impl::alloc_buffers() {
  Tdual = s + N;
  maxs_dual = (Tdual + ACH - 1) / ACH;
  maxs_single = (N + ACH - 1) / ACH;
  if (std::max(maxs_dual, maxs_single) > ATT_MAXSPLIT)
    throw cubeforge::Error("CUDA GPT: " + std::to_string(std::max(maxs_dual, maxs_single)) +
                           " attention splits per head exceed the fast kernels' limit of " +
                           std::to_string(ATT_MAXSPLIT) + " (sequence too long)");
  const size_t kvd = (size_t)L * Rmax * H * Tdual * HD, kvs = (size_t)Rmax * H * N * HD;
  kc = dalloc<bf16>(kvd);
  vc = dalloc<bf16>(kvd);
  skc = dalloc<bf16>(kvs);
  svc = dalloc<bf16>(kvs);
  kv_bytes = (kvd + kvs) * 2 * 2;
  rope = dalloc<float2>((size_t)N * (HD / 2));
  {
    std::vector<float2> t((size_t)N * (HD / 2));
    for (int j = 0; j < HD / 2; ++j) {
      const float e = (float)(2 * j) / (float)HD;
      const float inv = 1.0f / std::pow((float)cfg.rope_theta, e);
      for (int p = 0; p < N; ++p) {
        const float a = (float)p * inv;
        t[(size_t)p * (HD / 2) + j] = make_float2(std::cos(a), std::sin(a));
      }
    }
    CF_CUDA(cudaMemcpy(rope, t.data(), t.size() * sizeof(float2), cudaMemcpyHostToDevice));
  }
  x = dalloc<float>((size_t)Rmax * D);
  stats = dalloc<float>((size_t)Rmax * NSLOT * 2);
  qkv = dalloc<float>((size_t)Rmax * QKV_LD);
  att = dalloc<bf16>((size_t)Rmax * D);
  att_lo = dalloc<bf16>((size_t)Rmax * D);
  hbuf = dalloc<bf16>((size_t)Rmax * F);
  hbuf_lo = dalloc<bf16>((size_t)Rmax * F);
  CF_CUDA(cudaMemset(att_lo, 0, (size_t)Rmax * D * 2));
  CF_CUDA(cudaMemset(hbuf_lo, 0, (size_t)Rmax * F * 2));
  sconst = dalloc<float>((size_t)Rmax * D);
  const int maxs = std::max(maxs_dual, maxs_single);
  atstride = maxs;
  atpart = dalloc<unsigned long long>((size_t)Rmax * H * maxs * (HD + 2));
  CF_CUDA(cudaMemset(atpart, 0, (size_t)Rmax * H * maxs * (HD + 2) * sizeof(unsigned long long)));
  aep = dalloc<unsigned>((size_t)Rmax * H);  // epochs start at 1: the cleared words read as not yet written
  CF_CUDA(cudaMemset(aep, 0, (size_t)Rmax * H * sizeof(unsigned)));
  ks_scratch = dalloc<float>((size_t)(D / 8) * 8 * 16 * 8);  // tiles x KSPLIT (<= 8) x 16 rows x 8
  ks_cnt = dalloc<unsigned>(D / 8);
  tl = dalloc<unsigned long long>(3 * (size_t)kTlMax);
#ifdef CF_DIAG_PHASES
  mlp_ph = dalloc<unsigned long long>((size_t)MLP_NB * MLP_PH);
  qkv_ph_blocks = 2 * nsm;  // Gemv1 grids: at most 2 blocks per SM
  qkv_ph = dalloc<unsigned long long>((size_t)qkv_ph_blocks * GEMV_PH);
#endif
  CF_CUDA(cudaMemset(ks_cnt, 0, (D / 8) * sizeof(unsigned)));
  lm_blocks = GemvLm::blocks(Vs);
  lm_val = dalloc<float>((size_t)MAXP * lm_blocks);
  lm_idx = dalloc<int>((size_t)MAXP * lm_blocks);
  guided = dalloc<float>((size_t)MAXP * Vs);
  raw = dalloc<float>((size_t)Rmax * Vs);
  tokens = dalloc<int>((size_t)MAXP * N);
  CF_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&h_tokens), (size_t)MAXP * N * sizeof(int), cudaHostAllocMapped));
  CF_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&h_tokens_dev), h_tokens, 0));
  ctl = dalloc<Ctl>(1);
  dyn = dalloc<Dyn>(1);
  CF_CUDA(cudaMemset(dyn, 0, sizeof(Dyn)));
  const size_t M = (size_t)Rmax * s;
  pc = dalloc<float>(M * D);
  pacc = dalloc<float>(2 * M * 2 * F);  // hi rows then lo rows (split_pre)
  // Cleared once so that compute-sanitizer initcheck can run past the prefill: it reported the reads of this
  // cuBLAS output by cond_qkv_post_kernel as uninitialised (session 7), although they are rows the GEMM just wrote
  // (cuda-check's prefill-dependent errors are unchanged); initcheck does not seem to see the library's writes.
  CF_CUDA(cudaMemset(pacc, 0, 2 * M * 2 * F * sizeof(float)));
  pact = dalloc<bf16>(2 * M * F);
  pq = dalloc<float>(M * D);
  patt = dalloc<bf16>(2 * M * D);
  if (mlp_on) {
    mlp_part = dalloc<float>((size_t)(D / 8) * MLP_NB * Rmax * 8);
    // epoch 0 never occurs (the first launch's is 1), so the cleared words read as not yet written
    mlp_tagged = dalloc<unsigned long long>(MLP_TAG_WORDS);
    CF_CUDA(cudaMemset(mlp_tagged, 0, MLP_TAG_WORDS * sizeof(unsigned long long)));
    mlp_ctr = dalloc<unsigned long long>(1);
    CF_CUDA(cudaMemset(mlp_ctr, 0, sizeof(unsigned long long)));
    size_t m = 0;
    for (int r = 1; r <= Rmax; ++r) m = std::max(m, mlp_smem(r, mlp_slots(r)));
    for (MlpKernel k : kMlpKernels)
      CF_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)m));
  }
  if (diag_hash) hlog = dalloc<unsigned>((size_t)N * kHashK * kHashSub);
  GemvQkv::prepare();
  GemvOproj::prepare();
  GemvGateUp::prepare();
  GemvDown::prepare();
  GemvLm::prepare();
  Gemv1Qkv::prepare();
  Gemv1QkvSm::prepare();
  Gemv1Down::prepare();
  Gemv1GateUp::prepare();
  // The carveout groups (CUBEFORGE_GPT_CARVEOUT, cuda_common.cuh; by default "one"): the named kernels prefer the
  // largest shared-memory carveout, set after the occupancies above were taken.
  constexpr int kMaxShared = cudaSharedmemCarveoutMaxShared;
  auto prefer = [](auto* kernel) {
    CF_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, kMaxShared));
  };
  if (carveout_group("qkv1")) Gemv1QkvSm::prefer_carveout(kMaxShared);
  if (carveout_group("qkv8")) {
    Gemv1Qkv::prefer_carveout(kMaxShared);
    GemvQkv::prefer_carveout(kMaxShared);
  }
  if (carveout_group("attn1")) prefer(attn_decode_kernel<true, false>);
  if (carveout_group("attn8")) {
    prefer(attn_decode_kernel<false, true>);
    prefer(attn_decode_kernel<false, false>);
  }
  if (carveout_group("oproj")) GemvOproj::prefer_carveout(kMaxShared);
  if (carveout_group("mlp1")) prefer(kMlpKernels[0]);
  if (carveout_group("mlp8")) {
    prefer(kMlpKernels[1]);
    prefer(kMlpKernels[2]);
  }
  if (carveout_group("lm")) {
    prefer(lm_ring_kernel);
    GemvLm::prefer_carveout(kMaxShared);
  }
}

}  // namespace cubeforge::cuda
