// CudaGptEngine::Impl's decode step: the launches of one step (dual layers, single block, lm_head, top-p), the
// graphs of several steps that replay them and the control block (base_params ... enqueue_step, graph, make_ctl).
// Included once, by cuda_gpt_engine.cu (the engine is one translation unit: see there).
#pragma once
#include <tuple>

#include "gpt_engine_impl.cuh"
#include "token_stream.h"

namespace cubeforge::cuda {

GemvParams CudaGptEngine::Impl::base_params() const {
  GemvParams p = {};
  p.blocked = blocked;
  p.wmask = diag_l2w ? ((1ull << 20) - 1) : 0;
  p.R = R;
  p.X = x;
  p.stats = diag_nostats ? nullptr : stats;
  p.eps = cfg.eps;
  p.resid = x;
  p.stats_out = stats;
  p.ks_scratch = ks_scratch;
  p.ks_cnt = ks_cnt;
  p.split = split_dec;
  p.tl = nullptr;
  return p;
}

void CudaGptEngine::Impl::block_step(const StreamW& w, bf16* k_l, bf16* v_l, int T, int coff, int maxs, bool attn,
                                     const float* add2, float* save_y) {
  const bool pdl = opts.pdl;
  if (attn) {
    GemvParams q = base_params();
    q.W = w.qkv;
    q.N = 3 * D;
    q.bias = w.vb;
    q.bias_from = 2 * D;
    q.out_f = qkv;
    q.ld_out = QKV_LD;
    diag_slots(q, single_now ? "s.qkv" : "qkv");
    if (qkv_ph && diag_tl && !single_now && cur_layer == L / 2 + 1 && !step0_now && R <= qkv_sm_rows &&
        Gemv1QkvSm::grid_for(3 * D, nsm) <= qkv_ph_blocks)
      q.ph = qkv_ph;
    if (!(R <= qkv_sm_rows ? Gemv1QkvSm::run(q, stream, pdl, nsm, qkv_blocks)
                           : Gemv1Qkv::run(q, stream, pdl, nsm, qkv_blocks_wide)))
      GemvQkv::run(q, stream, pdl, nsm);
    AttnParams a = {};
    a.qkv = qkv;
    a.qnorm = w.qn;
    a.knorm = w.kn;
    a.kc = k_l;
    a.vc = v_l;
    a.T = T;
    a.coff = coff;
    a.prefix_rows = coff > 0 ? prefix_rows() : 0;
    a.slot0_only = 0;
    a.rope = rope;
    a.dyn = dyn;
    a.out = att;
    a.out_lo = att_lo;
    a.maxs = maxs;
    a.tpart = atpart;
    a.ep = aep;
    a.tstride = atstride;
    a.early_trig = early_trig & 1;
    diag_slots(a, single_now ? "s.attn" : "attn");
    if (!diag_no_attn)
      launch(R <= attn_spread_rows ? attn_decode_kernel<true, false>
             : a.prefix_rows       ? attn_decode_kernel<false, true>
                                   : attn_decode_kernel<false, false>,
             dim3(maxs, H, R), dim3(128), 0, stream, pdl, a);
    GemvParams o = base_params();
    o.W = w.o;
    o.N = D;
    o.A = att;
    o.A_lo = att_lo;
    o.bias = w.ob;
    o.save_y = save_y;
    o.early_trig = (early_trig >> 1) & 1;
    diag_slots(o, single_now ? "s.oproj" : "oproj");
    GemvOproj::run(o, stream, pdl, nsm, oproj_blocks);
  }
  if (mlp_on) {
    MlpParams m = {};
    m.g = base_params();
    m.g.add2 = add2;
    diag_slots(m.g, single_now ? "s.mlp" : "mlp");
    m.Wgu = w.gu;
    m.bgu = w.gub;
    m.Wdn = w.dn;
    m.bdn = w.dnb;
    m.part = mlp_part;
    m.tagged = mlp_tagged;
    m.ctr = mlp_ctr;
    m.nst = mlp_slots(R);
    m.pre = mlp_pre(m.nst);
    m.spin_limit = 1ull << 24;
    m.nred = mlp_reducers(R);
    if (mlp_ph && diag_tl && !single_now && cur_layer == L / 2 && !step0_now && R <= 2) {
      m.ph = mlp_ph;
      ph_kseq = kseq;
    }
    launch(mlp_kernel_for(R), dim3(MLP_NB), dim3(MLP_THREADS), mlp_smem(R, m.nst), stream, pdl, m);
    return;
  }
  GemvParams g = base_params();
  g.W = w.gu;
  g.N = 2 * F;
  g.bias = w.gub;
  g.out = hbuf;
  g.out_lo = hbuf_lo;
  g.ld_out = F;
  diag_slots(g, single_now ? "s.gateup" : "gateup");
  if (!Gemv1GateUp::run(g, stream, pdl, nsm)) GemvGateUp::run(g, stream, pdl, nsm);
  GemvParams d = base_params();
  d.W = w.dn;
  d.N = D;
  d.A = hbuf;
  d.A_lo = hbuf_lo;
  d.bias = w.dnb;
  d.add2 = add2;
  diag_slots(d, single_now ? "s.down" : "down");
  if (!Gemv1Down::run(d, stream, pdl, nsm)) GemvDown::run(d, stream, pdl, nsm);
}

void CudaGptEngine::Impl::enqueue_step(const StepKind& k) {
  const bool pdl = opts.pdl;
  kseq = 0;
  single_now = false;
  step0_now = k.step0;
  if (k.step0) {  // x = BOS embedding in every row (plain launch: nothing before it in the stream is a kernel)
    init_rows_kernel<<<64, 256, 0, stream>>>(wte, cfg.bos_id(), R, x, stats);
    CF_CUDA(cudaGetLastError());
  }
  for (int l = 0; l < L; ++l) {
    cur_layer = l;
    const bool last = (l == L - 1);
    const float* add2 = (last && !k.step0 && !k.causal) ? sconst : nullptr;
    // diagnostic bit 19: every dual layer reads layer 0's weights (with the GEMVs' 2 MB windows they stay in L2)
    block_step(layers[diag_l2w ? 0 : l].x, kc_layer(kc, l), kc_layer(vc, l), Tdual, s, maxs_dual, true, add2, nullptr);
  }
  const bool sattn = k.step0 || k.causal;
  single_now = true;
  block_step(single, skc, svc, N, 0, maxs_single, sattn, nullptr, k.step0 ? sconst : nullptr);
  GemvParams p = base_params();
  p.W = lm;
  p.N = Vs;
  p.ctl = ctl;
  p.dyn = dyn;
  p.guided = guided;
  p.raw = raw;
  p.lm_val = lm_val;
  p.lm_idx = lm_idx;
  p.tail = k.topp ? 0 : 1;
  p.wte = wte;
  p.x_next = x;
  p.stats_next = stats;
  p.tokens = tokens;
  p.host_tokens = h_tokens_dev;
  diag_slots(p, "lm_head");
  if (lm_ring_on && R <= 8) {
    LmRingParams lq = {p, lm_ring_slots(R), 0};
    lq.pre = lm_pre_env >= 0 ? std::min(lm_pre_env, lq.nst) : lq.nst;
    launch(lm_ring_kernel, dim3(Vs / LMR_ROWS), dim3(LMR_THREADS), lm_ring_smem(R, lq.nst), stream, pdl, lq);
  } else {
    GemvLm::run(p, stream, pdl, nsm);
  }
  if (k.topp) {
    ToppParams t = {ctl, dyn, guided, wte, x, stats, tokens, h_tokens_dev, tl_slot("topp")};
    launch(topp_kernel, dim3(P), dim3(TOPP_THREADS), 0, stream, pdl, t);
  }
  if (!k.step0) kseq_graph = kseq;
}

cudaGraphExec_t CudaGptEngine::Impl::graph(bool causal, bool topp, int steps, double* capture_ms) {
  const auto key = std::make_tuple(R, cfg_on, causal, topp, steps, prefix_rows());
  auto it = graphs.find(key);
  if (it != graphs.end()) return it->second;
  const double t0 = now_ms();
  cudaGraphExec_t exec = capture_graph(stream, [&] {
    for (int i = 0; i < steps; ++i) enqueue_step(StepKind{false, causal, topp});
  });
  graphs[key] = exec;
  if (capture_ms) *capture_ms += now_ms() - t0;
  return exec;
}

Ctl CudaGptEngine::Impl::make_ctl(double guidance) const {
  Ctl c = {};
  c.P = P;
  c.cfg = cfg_on ? 1 : 0;
  c.N = N;
  c.vocab = Vs;
  c.guidance = cfg_on ? guidance : 0.0;
  c.top_p = 0.9f;
  return c;
}

}  // namespace cubeforge::cuda
