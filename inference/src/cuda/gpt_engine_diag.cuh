// CudaGptEngine::Impl's diagnostics: state poisoning (variant bit 23), the decode kernels' timeline and output-hash
// slots (bits 21, 24), and the timeline and phase-stamp reports printed after a generate.
// Included once, by cuda_gpt_engine.cu (the engine is one translation unit: see there).
#pragma once
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "gpt_engine_impl.cuh"

namespace cubeforge::cuda {

void CudaGptEngine::Impl::poison_state() {
  const size_t pitch = (size_t)Tdual * HD * 2, width = (size_t)(Tdual - s) * HD * 2, rows = (size_t)L * Rmax * H;
  CF_CUDA(cudaMemset2DAsync(kc + (size_t)s * HD, pitch, 0xFF, width, rows, stream));
  CF_CUDA(cudaMemset2DAsync(vc + (size_t)s * HD, pitch, 0xFF, width, rows, stream));
  CF_CUDA(cudaMemsetAsync(skc, 0xFF, (size_t)Rmax * H * N * HD * 2, stream));
  CF_CUDA(cudaMemsetAsync(svc, 0xFF, (size_t)Rmax * H * N * HD * 2, stream));
  CF_CUDA(cudaMemsetAsync(qkv, 0xFF, (size_t)Rmax * QKV_LD * sizeof(float), stream));
  CF_CUDA(cudaMemsetAsync(att, 0xFF, (size_t)Rmax * D * 2, stream));
}

// Every decode kernel of a step takes the next index (and names it, outside step 0) here.
unsigned long long* CudaGptEngine::Impl::tl_slot(const char* name) {
  if (kseq >= kTlMax) return nullptr;
  if ((int)kname.size() <= kseq) kname.resize(kseq + 1);
  if (!step0_now) kname[kseq] = name;
  const int k = kseq++;
  return diag_tl ? tl + 3 * (size_t)k : nullptr;
}

// The next decode kernel's diagnostic slots: its timeline stamps (bit 21) and its output-hash words (bit 24).
template <typename Params>
void CudaGptEngine::Impl::diag_slots(Params& q, const char* name) {
  q.tl = tl_slot(name);
  q.hl = HashLog{hlog && kseq >= 1 && kseq <= kHashK ? hlog + (size_t)(kseq - 1) * kHashSub : nullptr, &dyn->pos};
}

// Timeline of one decode step (1-step graph replays at position N/2, after a generate): per kernel kind the mean
// span (start -> end), the mean increment of the step's critical path (end - previous end) and how early the
// kernel started before its predecessor ended. Diagnostics only (variant bit 21).
void CudaGptEngine::Impl::timeline_report(bool causal, bool topp) {
  cudaGraphExec_t g = graph(causal, topp, 1, nullptr);
  const int nk = std::min(kseq_graph, kTlMax), reps = 20;
  std::vector<unsigned long long> h(3 * (size_t)nk);
  std::vector<double> span(nk, 0), inc(nk, 0), early(nk, 0), waitlag(nk, 0), vis(nk, 0);
  double total = 0;
  const int mid = N / 2;
  for (int rep = 0; rep < reps; ++rep) {
    CF_CUDA(cudaMemcpyAsync(&dyn->pos, &mid, sizeof(int), cudaMemcpyHostToDevice, stream));
    CF_CUDA(cudaMemsetAsync(tl, 0xFF, 3 * sizeof(unsigned long long) * kTlMax, stream));
    if (mlp_ph) CF_CUDA(cudaMemsetAsync(mlp_ph, 0, sizeof(unsigned long long) * MLP_NB * MLP_PH, stream));
    if (qkv_ph) CF_CUDA(cudaMemsetAsync(qkv_ph, 0, sizeof(unsigned long long) * qkv_ph_blocks * GEMV_PH, stream));
    CF_CUDA(cudaGraphLaunch(g, stream));
    CF_CUDA(cudaMemcpyAsync(h.data(), tl, h.size() * 8, cudaMemcpyDeviceToHost, stream));
    CF_CUDA(cudaStreamSynchronize(stream));
    auto S = [&](int i) { return (double)h[3 * i]; };
    auto W = [&](int i) { return (double)h[3 * i + 1]; };
    auto E = [&](int i) { return (double)~h[3 * i + 2]; };
    for (int i = 0; i < nk; ++i) {
      span[i] += E(i) - S(i);
      inc[i] += i ? E(i) - E(i - 1) : E(i) - S(i);
      early[i] += i ? E(i - 1) - S(i) : 0.0;
      waitlag[i] += W(i) - S(i);
      vis[i] += i ? W(i) - E(i - 1) : 0.0;
    }
    total += E(nk - 1) - S(0);
  }
  std::map<std::string, std::array<double, 6>> agg;
  std::vector<std::string> order;
  for (int i = 0; i < nk; ++i) {
    auto it = agg.find(kname[i]);
    if (it == agg.end()) {
      order.push_back(kname[i]);
      agg[kname[i]] = {0, 0, 0, 0, 0, 0};
    }
    auto& a = agg[kname[i]];
    a[0] += 1;
    a[1] += span[i] / reps;
    a[2] += inc[i] / reps;
    a[3] += early[i] / reps;
    a[4] += waitlag[i] / reps;
    a[5] += vis[i] / reps;
  }
  std::fprintf(stderr, "timeline: one step (1-step graph, %d rows, %s, pos %d, %d replays): %d kernels, first start "
               "-> last end %.1f us\n", R, topp ? "top-p" : "argmax", mid, reps, nk, total / reps / 1000.0);
  // handoff: the predecessor's last block end -> this kernel's first return from its wait (session 18: 0.5-0.8 us
  // at every boundary of the one-prompt step, so the boundaries themselves are not where the step's time goes)
  std::fprintf(stderr, "timeline: %-9s %4s %10s %12s %12s %12s %12s %12s\n", "kernel", "n", "span us",
               "increment us", "sum incr us", "early us", "wait-lag us", "handoff us");
  for (const auto& nm : order) {
    const auto& a = agg[nm];
    std::fprintf(stderr, "timeline: %-9s %4d %10.2f %12.2f %12.1f %12.2f %12.2f %12.2f\n", nm.c_str(), (int)a[0],
                 a[1] / a[0] / 1000.0, a[2] / a[0] / 1000.0, a[2] / 1000.0, a[3] / a[0] / 1000.0,
                 a[4] / a[0] / 1000.0, a[5] / a[0] / 1000.0);
  }
  if (mlp_ph && ph_kseq > 0 && ph_kseq < nk) mlp_phase_report(h);
}

// Phase stamps (CF_DIAG_PHASES builds, with the timeline): the middle dual layer's MLP per block (last replay), us
// relative to the MLP's own last block end (timeline slot ph_kseq - 1): medians and maxima of the reducers and of
// the blocks that leave after their partials, then per ring stage when the producer requested it and when consumer
// warp 0 got it (all blocks).
void CudaGptEngine::Impl::mlp_phase_report(const std::vector<unsigned long long>& h) {
  std::vector<unsigned long long> ph((size_t)MLP_NB * MLP_PH);
  CF_CUDA(cudaMemcpy(ph.data(), mlp_ph, ph.size() * 8, cudaMemcpyDeviceToHost));
  const double prev_end = (double)~h[3 * (ph_kseq - 1) + 2];
  const int nred = mlp_reducers(R);
  std::vector<std::vector<double>> red(MLP_PH), lv(MLP_PH), all(MLP_PH);
  for (int b = 0; b < MLP_NB; ++b) {
    const unsigned long long* t = &ph[(size_t)b * MLP_PH];
    auto& grp = (int)t[MLP_PH_RANK] >= MLP_NB - nred ? red : lv;
    for (int i = 0; i < MLP_PH; ++i)
      if (t[i] && i != MLP_PH_RANK) {
        const double us = ((double)t[i] - prev_end) / 1000.0;
        grp[i].push_back(us);
        all[i].push_back(us);
      }
  }
  static const char* names[MLP_PH_RANK] = {"entry", "wait returned", "LN prologue", "gate/up MMAs", "SwiGLU",
                                  "down-proj", "producer done", "partials out", "sums read", "end"};
  auto stat = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, (size_t)(q * (double)(v.size() - 1) + 0.5))];
  };
  std::fprintf(stderr,
               "mlp phases (layer %d, us relative to the MLP's last block end; reducers %zu, leavers %zu; pre %d of "
               "%d)\n", L / 2, red[0].size(), lv[0].size(), mlp_pre(mlp_slots(R)), mlp_slots(R));
  for (int i = 0; i < MLP_PH_RANK; ++i)
    std::fprintf(stderr, "mlp phases: %-14s reducers min %7.2f p50 %7.2f max %7.2f | leavers min %7.2f p50 %7.2f max %7.2f\n",
                 names[i], stat(red[i], 0), stat(red[i], 0.5), stat(red[i], 1.0), stat(lv[i], 0), stat(lv[i], 0.5),
                 stat(lv[i], 1.0));
  for (int i = 0; i < MLP_NST; ++i) {
    const auto& rq = all[MLP_PH_STAGE + i];
    const auto& tk = all[MLP_PH_STAGE + MLP_NST + i];
    std::fprintf(stderr, "mlp stages: %-3s %2d requested p50 %7.2f max %7.2f | taken min %7.2f p50 %7.2f max %7.2f\n",
                 i < MLP_GU_ST ? "g/u" : "dn", i, stat(rq, 0.5), stat(rq, 1.0), stat(tk, 0), stat(tk, 0.5),
                 stat(tk, 1.0));
  }
  qkv_phase_report(ph, prev_end, nred);
}

// The next layer's qkv blocks (one-round kernel, stamped when its grid fits qkv_ph), same time origin, grouped by
// what shared their SM: an MLP reducer (its block can start only once that reducer ends, if it is the SM's second
// qkv block), an MLP block that left early, or no MLP block; within each group the blocks of the first and the
// second half of the grid (the first half is dispatched first, one block per SM beside the MLP blocks).
void CudaGptEngine::Impl::qkv_phase_report(const std::vector<unsigned long long>& mph, double origin, int nred) {
  const int nb = Gemv1QkvSm::grid_for(3 * D, nsm);
  if (nb <= 0 || nb > qkv_ph_blocks) return;
  std::vector<unsigned long long> q((size_t)nb * GEMV_PH);
  CF_CUDA(cudaMemcpy(q.data(), qkv_ph, q.size() * 8, cudaMemcpyDeviceToHost));
  std::vector<int> role(nsm + 64, 0);  // per SM: 0 no MLP block, 1 leaver, 2 reducer
  for (int b = 0; b < MLP_NB; ++b) {
    const unsigned long long* t = &mph[(size_t)b * MLP_PH];
    const size_t sm = (size_t)t[MLP_PH_SM];
    if (sm < role.size()) role[sm] = (int)t[MLP_PH_RANK] >= MLP_NB - nred ? 2 : 1;
  }
  static const char* rn[3] = {"no MLP", "leaver", "reducer"};
  static const char* pn[GEMV_PH_SM] = {"entry", "wait", "staged", "MMAs done", "end"};
  std::fprintf(stderr, "qkv phases (layer %d, %d blocks, us relative to the previous MLP's last block end)\n",
               L / 2 + 1, nb);
  for (int r = 0; r < 3; ++r)
    for (int half = 0; half < 2; ++half) {
      std::vector<double> v[GEMV_PH_SM];
      for (int b = half * (nb / 2); b < (half ? nb : nb / 2); ++b) {
        const unsigned long long* t = &q[(size_t)b * GEMV_PH];
        if (!t[0] || (size_t)t[GEMV_PH_SM] >= role.size() || role[t[GEMV_PH_SM]] != r) continue;
        for (int i = 0; i < GEMV_PH_SM; ++i) v[i].push_back(((double)t[i] - origin) / 1000.0);
      }
      if (v[0].empty()) continue;
      std::fprintf(stderr, "qkv phases: SM with %-7s blocks %s half (%3zu):", rn[r], half ? "2nd" : "1st",
                   v[0].size());
      for (int i = 0; i < GEMV_PH_SM; ++i) {
        std::sort(v[i].begin(), v[i].end());
        std::fprintf(stderr, " %s p50 %7.2f max %7.2f%s", pn[i], v[i][v[i].size() / 2], v[i].back(),
                     i < GEMV_PH_SM - 1 ? " |" : "\n");
      }
    }
}

}  // namespace cubeforge::cuda
