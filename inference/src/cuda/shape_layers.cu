// The layer operations of both decoders, launched at the kernels' compile-time instantiations: LayerNorm, residual +
// LayerNorm and the occupancy head switch over the width (rows_dispatch), attention and the head split over the head
// dim (hd_dispatch).
#include <cmath>
#include <string>
#include <type_traits>

#include "cubeforge/error.h"
#include "shape_engine_impl.cuh"
#include "shape_gpu_kernels.cuh"

namespace cubeforge::cuda {

// ---- kernels with width / head-dim dispatch (host switches over template instantiations) -----------------------
// Row kernels: CPL = ceil(W / 256) vectors of 8 per lane; full_rows (W % 256 == 0) picks the compile-time-width
// instantiation (the full-size model's code), else the masked one with W passed at run time.
template <typename Launch>
void CudaShapeEngine::Impl::rows_dispatch(const Launch& launch) {
#define CF_ROWS_CASE(c)                                                                          \
  case c:                                                                                        \
    if (full_rows) launch(std::integral_constant<int, c>{}, std::true_type{});                   \
    else launch(std::integral_constant<int, c>{}, std::false_type{});                            \
    break;
  switch (CPL) {
    CF_ROWS_CASE(1)
    CF_ROWS_CASE(2)
    CF_ROWS_CASE(3)
    CF_ROWS_CASE(4)
    default: throw Error("CUDA shape: width " + std::to_string(W) + " above 1024");
  }
#undef CF_ROWS_CASE
  CF_CHECK_LAUNCH();
}

template <typename Launch>
void CudaShapeEngine::Impl::hd_dispatch(const Launch& launch) {
  switch (HD) {
    case 8: launch(std::integral_constant<int, 8>{}); break;
    case 16: launch(std::integral_constant<int, 16>{}); break;
    case 32: launch(std::integral_constant<int, 32>{}); break;
    case 64: launch(std::integral_constant<int, 64>{}); break;
    case 128: launch(std::integral_constant<int, 128>{}); break;
    default: throw Error("CUDA shape: head_dim " + std::to_string(HD) + " has no kernel");
  }
  CF_CHECK_LAUNCH();
}

void CudaShapeEngine::Impl::ln_bf16(const bf16* x, bf16* y, long rows) {
  const unsigned b = blocks_for(size_t(rows), 8);
  rows_dispatch([&](auto cpl, auto full) {
    ln_bf16_kernel<decltype(cpl)::value, decltype(full)::value><<<b, 256, 0, stream>>>(x, y, rows, eps, W);
  });
}

void CudaShapeEngine::Impl::resid_ln(float* h, const bf16* o, bf16* t, long rows) {
  const unsigned b = blocks_for(size_t(rows), 8);
  rows_dispatch([&](auto cpl, auto full) {
    resid_ln_f32_kernel<decltype(cpl)::value, decltype(full)::value><<<b, 256, 0, stream>>>(h, o, t, rows, eps, W);
  });
}

void CudaShapeEngine::Impl::head(const bf16* q0, long rows, float* out, const PointSet& ps, float* vals,
                                 uint32_t* bts) {
  const unsigned b = blocks_for(size_t(rows), 8 * kHeadRows);  // 8 warps of kHeadRows rows
  rows_dispatch([&](auto cpl, auto full) {
    head_kernel<decltype(cpl)::value, decltype(full)::value><<<b, 256, 0, stream>>>(
        q0, rows, eps, lnf_w, lnf_b, head_w, head_b, out, ps, vals, bts, W);
  });
}

void CudaShapeEngine::Impl::attention(const bf16* Q, int q_stride, long P, const bf16* K, const bf16* Vt, int Nkv,
                                      bf16* O, int o_stride) {
  if (P <= 0) return;
  const float scale_log2 = float(1.0 / std::sqrt(double(HD)) * 1.4426950408889634);
  const dim3 grid(unsigned((P + kAttnRows - 1) / kAttnRows), unsigned(H));
  hd_dispatch([&](auto hd) {
    constexpr int kHd = decltype(hd)::value;
    if constexpr (kHd == 64)  // session 24: two m16 tiles per warp at the full-size model's head dim
      if (attn_mt == 2) {
        attention_kernel<64, 2><<<grid, attn_threads(2), 0, stream>>>(Q, q_stride, int(P), K, Vt, Nkv, Npad,
                                                                      scale_log2, O, o_stride);
        return;
      }
    attention_kernel<kHd><<<grid, attn_threads(1), 0, stream>>>(Q, q_stride, int(P), K, Vt, Nkv, Npad, scale_log2, O,
                                                                o_stride);
  });
}

void CudaShapeEngine::Impl::split_heads(const bf16* src, int src_stride, int T, int q_off, int k_off, int v_off,
                                        const float* qn, const float* kn, bf16* Qo, bf16* K, bf16* Vt) {
  const size_t warps = size_t(T) * H;
  hd_dispatch([&](auto hd) {
    split_heads_kernel<decltype(hd)::value><<<blocks_for(warps, 8), 256, 0, stream>>>(
        src, src_stride, T, H, q_off, k_off, v_off, qn, kn, Qo, K, Vt, Npad);
  });
}

}  // namespace cubeforge::cuda
