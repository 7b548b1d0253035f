// The latent decoder of CudaShapeEngine: token ids (all N, or a preview prefix filled with the mean code) -> latents
// through the self-attention layers, or latents bound from elsewhere; then the occupancy decoder's cross-attention
// keys/values for the current shape.
#include <string>
#include <vector>

#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "shape_engine_impl.cuh"
#include "shape_gpu_kernels.cuh"

namespace cubeforge::cuda {
namespace shape_detail {

// Latent decoder input (§8.1-8.2): h[n][d] = bf16(c_out(bf16(C[ids[n]]))) + pos[n][d] (fp32). One thread per (n, d).
__global__ void latent_input_kernel(const int* __restrict__ ids, int T, const float* __restrict__ codebook, int E,
                                    const bf16* __restrict__ w, const bf16* __restrict__ b, const float* __restrict__ pos,
                                    int W, float* __restrict__ h) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T * W) return;
  const int n = t / W, d = t % W;
  const float* z = codebook + size_t(ids[n]) * E;
  const bf16* wr = w + size_t(d) * E;
  float acc = 0.0f;
  for (int e = 0; e < E; ++e) acc = fmaf(round_bf(z[e]), bf(wr[e]), acc);
  h[t] = round_bf(acc + bf(b[d])) + pos[t];
}

}  // namespace shape_detail

// ---- latent side -------------------------------------------------------------------------------------------------
// lat (T rows) → t = bf16(LN(lat)) → cross-attention keys/values of the occupancy decoder.
void CudaShapeEngine::Impl::occupancy_kv(int T, bool ln_needed) {
  if (ln_needed) resid_ln(lat, nullptr, lt, T);
  CF_CUDA(cudaMemsetAsync(occK, 0, size_t(H) * Npad * HD * 2, stream));
  CF_CUDA(cudaMemsetAsync(occVt, 0, size_t(H) * Npad * HD * 2, stream));
  gemm.run(stream, lt, T, W, kv_w, 2 * W, kv_b, kvtmp, Gemm::kBias, false);
  split_heads(kvtmp, 2 * W, T, -1, 0, W, nullptr, nullptr, nullptr, occK, occVt);
  lat_rows = T;
  have_shape = true;
}

void CudaShapeEngine::Impl::run_decoder(int T) {
  resid_ln(lat, nullptr, lt, T);
  CF_CUDA(cudaMemsetAsync(lK, 0, size_t(H) * Npad * HD * 2, stream));
  CF_CUDA(cudaMemsetAsync(lVt, 0, size_t(H) * Npad * HD * 2, stream));
  for (const LayerW& L : layers) {
    gemm.run(stream, lt, T, W, L.qkv, 3 * W, L.qkv_b, lqkv, Gemm::kBias, false);
    split_heads(lqkv, 3 * W, T, 0, W, 2 * W, L.qn, L.kn, lq, lK, lVt);
    attention(lq, W, T, lK, lVt, T, latt, W);
    gemm.run(stream, latt, T, W, L.proj, W, L.proj_b, lo, Gemm::kBias, false);
    resid_ln(lat, lo, lt, T);
    gemm.run(stream, lt, T, W, L.up, 4 * W, L.up_b, lu, Gemm::kBias, false);
    bias_act(stream, lu, T, 4 * W, nullptr, kActGelu);
    gemm.run(stream, lu, T, 4 * W, L.dn, W, L.dn_b, lo, Gemm::kBias, false);
    resid_ln(lat, lo, lt, T);  // t = LN(h) feeds the next layer (and, after the last, the occupancy K/V)
  }
}

// ---- latents ----------------------------------------------------------------------------------------------------------

double CudaShapeEngine::decode_tokens(const std::vector<int>& ids) {
  Impl& m = *impl_;
  if (int(ids.size()) != m.N)
    throw Error("CUDA shape decode: expected " + std::to_string(m.N) + " token ids, got " + std::to_string(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= m.codes)
      throw Error("CUDA shape decode: token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is out of range [0, " + std::to_string(m.codes) + ")");
  return m.decode_ids(ids);
}

double CudaShapeEngine::decode_preview(const std::vector<int>& prefix) {
  Impl& m = *impl_;
  if (prefix.empty() || int(prefix.size()) > m.N)
    throw Error("CUDA shape preview: needs 1.." + std::to_string(m.N) + " token ids, got " +
                std::to_string(prefix.size()));
  for (size_t i = 0; i < prefix.size(); ++i)
    if (prefix[i] < 0 || prefix[i] >= m.codes)
      throw Error("CUDA shape preview: token id " + std::to_string(prefix[i]) + " at position " + std::to_string(i) +
                  " is out of range [0, " + std::to_string(m.codes) + ")");
  std::vector<int> ids(prefix);
  ids.resize(size_t(m.N), m.codes);  // device codebook row `codes` = the mean code
  return m.decode_ids(ids);
}

double CudaShapeEngine::Impl::decode_ids(const std::vector<int>& ids) {
  Impl& m = *this;
  m.ev_used = 0;
  const EventPair ev = m.next_events();
  CF_CUDA(cudaMemcpyAsync(m.ids_d, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice, m.stream));
  CF_CUDA(cudaEventRecord(ev.a, m.stream));
  latent_input_kernel<<<blocks_for(size_t(m.N) * m.W, 256), 256, 0, m.stream>>>(m.ids_d, m.N, m.codebook, m.E, m.c_out_w,
                                                                                m.c_out_b, m.pos, m.W, m.lat);
  CF_CHECK_LAUNCH();
  m.run_decoder(m.N);
  m.occupancy_kv(m.N, /*ln_needed=*/false);  // lt = LN(latents) after the last layer
  CF_CUDA(cudaEventRecord(ev.b, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  return m.drain_events();
}

double CudaShapeEngine::set_latents(const Latents& lat) {
  Impl& m = *impl_;
  if (lat.width != m.W || lat.count < 1 || lat.count > m.N || lat.data.size() != size_t(lat.count) * lat.width)
    throw Error("CUDA shape: latents must be 1.." + std::to_string(m.N) + " rows of width " + std::to_string(m.W));
  m.ev_used = 0;
  const EventPair ev = m.next_events();
  CF_CUDA(cudaMemcpyAsync(m.lat, lat.data.data(), lat.data.size() * 4, cudaMemcpyHostToDevice, m.stream));
  CF_CUDA(cudaEventRecord(ev.a, m.stream));
  m.occupancy_kv(lat.count, /*ln_needed=*/true);
  CF_CUDA(cudaEventRecord(ev.b, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  return m.drain_events();
}

Latents CudaShapeEngine::latents() const {
  const Impl& m = *impl_;
  Latents l;
  if (!m.have_shape) return l;
  l.count = m.lat_rows;
  l.width = m.W;
  l.data.resize(size_t(l.count) * l.width);
  CF_CUDA(cudaMemcpyAsync(l.data.data(), m.lat, l.data.size() * 4, cudaMemcpyDeviceToHost, m.stream));
  CF_CUDA(cudaStreamSynchronize(m.stream));
  return l;
}

}  // namespace cubeforge::cuda
