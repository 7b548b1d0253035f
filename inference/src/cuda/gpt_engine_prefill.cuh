// CudaGptEngine::Impl's prefill: the cond stream through cuBLAS GEMMs and the prefill kernels into the KV caches,
// replayed as a graph per row count (gemm, prefill_graph, run_cond_stream).
// Included once, by cuda_gpt_engine.cu (the engine is one translation unit: see there).
#pragma once
#include <cstdio>

#include "cublas_check.h"
#include "gpt_engine_impl.cuh"
#include "token_stream.h"

namespace cubeforge::cuda {

void CudaGptEngine::Impl::gemm(const bf16* A, int M, int K, const bf16* W, int Nn, float* C) {
  const float one = 1.f, zero = 0.f;
  CF_CUBLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, Nn, M, K, &one, W, CUDA_R_16BF, K, A, CUDA_R_16BF, K, &zero,
                       C, CUDA_R_32F, Nn, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The prefill graph of the current rows and computed rows (captured on first use), or null: eager prefill.
cudaGraphExec_t CudaGptEngine::Impl::prefill_graph() {
  if (!prefill_graph_on) return nullptr;
  auto it = prefill_graphs.find({R, Rpre});
  if (it != prefill_graphs.end()) return it->second;
  try {
    cudaGraphExec_t exec = capture_graph(stream, [&] { run_cond_stream(); });
    prefill_graphs[{R, Rpre}] = exec;
    return exec;
  } catch (const cubeforge::Error& e) {
    std::fprintf(stderr, "cubeforge cuda: prefill graph capture failed (%s); eager prefill\n", e.what());
    prefill_graph_on = false;
    return nullptr;
  }
}

// The cond stream of rows [0, Rpre) into the caches (laid out for R rows), then, where Rpre < R, their slots copied
// to the other prompts' rows: with CFG row 1 (uncond) to [P, 2P) first, since row 1 is itself a cond row's place.
void CudaGptEngine::Impl::run_cond_stream() {
  const int M = Rpre * s;
  const bool sp = split_pre != 0;
  const int Mg = sp ? 2 * M : M;  // GEMM rows: hi parts, then lo parts
  const long loD = sp ? (long)M * D : 0, loF = sp ? (long)M * F : 0;
  const int eb = std::min<long>(4096, ((long)M * D + 255) / 256);
  const dim3 agrid(Rpre, H, (s + 3) / 4);
  for (int l = 0; l < L; ++l) {
    const StreamW& w = layers[l].c;
    bf16* k_l = kc_layer(kc, l);
    bf16* v_l = kc_layer(vc, l);
    ln_rows_kernel<<<M, 256, 0, stream>>>(pc, pact, cfg.eps, loD);
    CF_CUDA(cudaGetLastError());
    if (!layers[l].cond_pre_only) {
      gemm(pact, Mg, D, w.qkv, 3 * D, pacc);
      cond_qkv_post_kernel<<<dim3(M, H), 128, 0, stream>>>(pacc, 3 * D, sp ? (long)M * 3 * D : 0, w.vb, 0, w.qn,
                                                           w.kn, s, Tdual, pq, k_l, v_l);
      CF_CUDA(cudaGetLastError());
      cond_attn_kernel<<<agrid, 128, 0, stream>>>(pq, k_l, v_l, s, Tdual, patt, loD);
      CF_CUDA(cudaGetLastError());
      gemm(patt, Mg, D, w.o, D, pacc);
      bias_resid_kernel<<<eb, 256, 0, stream>>>(pacc, loD, w.ob, pc, (long)M * D);
      CF_CUDA(cudaGetLastError());
      ln_rows_kernel<<<M, 256, 0, stream>>>(pc, pact, cfg.eps, loD);
      CF_CUDA(cudaGetLastError());
      gemm(pact, Mg, D, w.gu, 2 * F, pacc);
      swiglu_rows_kernel<<<4096, 256, 0, stream>>>(pacc, sp ? (long)M * 2 * F : 0, w.gub, pact, loF, M);
      CF_CUDA(cudaGetLastError());
      gemm(pact, Mg, F, w.dn, D, pacc);
      bias_resid_kernel<<<eb, 256, 0, stream>>>(pacc, loD, w.dnb, pc, (long)M * D);
      CF_CUDA(cudaGetLastError());
    } else {
      gemm(pact, Mg, D, w.qkv, 2 * D, pacc);
      cond_qkv_post_kernel<<<dim3(M, H), 128, 0, stream>>>(pacc, 2 * D, sp ? (long)M * 2 * D : 0, w.vb, 1, nullptr,
                                                           w.kn, s, Tdual, pq, k_l, v_l);
      CF_CUDA(cudaGetLastError());
    }
  }
  if (Rpre < R) {
    const size_t lstride = (size_t)R * H * Tdual * HD;
    if (cfg_on) {  // rows [0, 2) computed: cond at 0, uncond at 1
      cond_rows_copy_kernel<<<dim3(L, H, P), 256, 0, stream>>>(kc, vc, lstride, Tdual, s, 1, P);
      CF_CUDA(cudaGetLastError());
    }
    cond_rows_copy_kernel<<<dim3(L, H, P - 1), 256, 0, stream>>>(kc, vc, lstride, Tdual, s, 0, 1);
    CF_CUDA(cudaGetLastError());
  }
}

}  // namespace cubeforge::cuda
