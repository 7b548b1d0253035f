// Golden cases through the CUDA shape engine (cuda_shape_golden.h): latents, query logits, rb-4 grid vs the
// reference's fp32 tensors, the CPU fp32 path beside it.
#include "cubeforge/cuda_shape_golden.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cubeforge/cuda_gpt.h"
#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "cubeforge/golden.h"
#include "cubeforge/model_config.h"
#include "cubeforge/safetensors.h"
#include "cubeforge/shape_model.h"
#include "report_format.h"

namespace cubeforge {

namespace {

CudaShapeGoldenLine compare(const std::string& tensor, const std::vector<float>& gpu, const std::vector<float>& ref,
                            const float* cpu, bool logits) {
  CudaShapeGoldenLine l;
  l.tensor = tensor;
  if (gpu.size() != ref.size()) {
    l.rel_err = INFINITY;
    l.note = report_line("size %zu, golden %zu", gpu.size(), ref.size());
    return l;
  }
  bool finite = true;
  for (size_t i = 0; i < gpu.size(); ++i) {
    finite = finite && std::isfinite(gpu[i]);
    l.max_abs = std::max(l.max_abs, double(std::fabs(gpu[i] - ref[i])));
  }
  l.rel_err = finite ? relative_l2(gpu.data(), ref.data(), ref.size()) : INFINITY;
  if (cpu) l.cpu_rel_err = relative_l2(cpu, ref.data(), ref.size());
  if (logits) {
    size_t same = 0;
    for (size_t i = 0; i < gpu.size(); ++i) same += (gpu[i] >= 0) == (ref[i] >= 0);
    l.sign_agreement = gpu.empty() ? 1.0 : double(same) / double(gpu.size());
  }
  l.ok = finite && l.rel_err < kCudaShapeGoldenTolerance;
  l.note = report_line("%zu values", ref.size());
  return l;
}

}  // namespace

CudaShapeGoldenReport run_shape_golden_cuda(const std::string& dir, const std::string& name) {
  std::string why;
  if (!cuda::cuda_available(&why)) throw Error("golden " + name + " (cuda shape): no usable GPU: " + why);
  const std::string base = (std::filesystem::path(dir) / name).string();
  for (const char* sfx : {"_config.json", "_shape.safetensors", "_io.safetensors"})
    if (!std::filesystem::exists(base + sfx))
      throw Error("golden case '" + name + "' in '" + dir + "': missing " + name + sfx);
  const ModelConfig cfg = load_model_config(base + "_config.json");
  const ShapeConfig& sc = cfg.shape;
  const SafeTensors file = SafeTensors::open(base + "_shape.safetensors");
  const SafeTensors io = SafeTensors::open(base + "_io.safetensors");
  const int N = sc.num_encoder_latents, W = sc.width;

  cuda::ShapeWeightSource src;
  src.get = [&file](const std::string& n, const std::vector<int64_t>& shape) {
    if (n == "embedder.weight")  // stored once under one of its module names (as ShapeModel::load and the backend)
      for (const char* a : {"embedder.weight", "encoder.embedder.weight", "occupancy_decoder.embedder.weight"})
        if (file.contains(a)) return file.to_f32(a, shape);
    return file.to_f32(n, shape);
  };
  cuda::ShapeEngineOptions eo;
  eo.verbose = false;
  auto eng = cuda::CudaShapeEngine::create(sc, src, eo);
  auto cpu = ShapeModel::load(sc, base + "_shape.safetensors");

  CudaShapeGoldenReport r;
  r.name = name;

  const std::vector<int64_t> ids64 = io.to_i64("token_ids", {1, N});
  const std::vector<int> ids(ids64.begin(), ids64.end());
  eng->decode_tokens(ids);
  const Latents lg = eng->latents();
  const Latents lc = cpu->decode_tokens(ids);
  const std::vector<float> lat_ref = io.to_f32("latents", {1, N, W});
  r.lines.push_back(compare("latents", lg.data, lat_ref, lc.data.data(), false));
  r.lines.back().note = report_line("[%d, %d] after the %d-layer latent decoder", N, W, sc.num_decoder_layers);

  const auto& qi = io.info("query_points");
  if (qi.shape.size() != 3 || qi.shape[0] != 1 || qi.shape[2] != 3)
    throw Error(io.path() + ": query_points has shape " + shape_str(qi.shape) + ", expected [1, Q, 3]");
  const size_t Q = size_t(qi.shape[1]);
  const std::vector<float> qp = io.to_f32("query_points");
  const std::vector<float> ql_ref = io.to_f32("query_logits", {1, int64_t(Q)});
  std::vector<float> qc(Q), qg(Q), qg_ref(Q);
  cpu->occupancy(lc)->evaluate(qp.data(), Q, qc.data());
  eng->evaluate(qp.data(), Q, qg.data());  // the engine's own latents
  r.lines.push_back(compare("query_logits", qg, ql_ref, qc.data(), true));
  r.lines.back().note = report_line("%zu points, Fourier path, from the GPU latents", Q);

  Latents lref;
  lref.count = N;
  lref.width = W;
  lref.data = lat_ref;
  eng->set_latents(lref);
  eng->evaluate(qp.data(), Q, qg_ref.data());
  r.lines.push_back(compare("query_logits (golden latents)", qg_ref, ql_ref, nullptr, true));
  r.lines.back().note = report_line("%zu points, occupancy decoder alone", Q);

  eng->decode_tokens(ids);
  cuda::GpuGridOptions go;
  go.adaptive = false;
  const GridValues gg = eng->grid(4, go);
  const GridValues gc = cpu->occupancy(lc)->grid_dense(4);
  const std::vector<float> grid_ref = io.to_f32("grid_res4_logits", {gg.M, gg.M, gg.M});
  r.lines.push_back(compare("grid_res4_logits", gg.values, grid_ref, gc.values.data(), true));
  r.lines.back().note = report_line("%d^3 dense device grid (per-axis table path)", gg.M);
  r.engine = report_line("CUDA shape engine on %s: width %d, %d heads (head_dim %d), %d latents, %d decoder layers, "
                 "num_freqs %d; %s",
                 eng->device_name().c_str(), W, sc.num_heads, W / sc.num_heads, N, sc.num_decoder_layers,
                 sc.num_freqs, eng->gemm_path().c_str());
  return r;
}

std::string format_shape_golden_line(const CudaShapeGoldenLine& l) {
  std::string s = report_line("%-30s rel L2 %.3e (max abs %.2e)", l.tensor.c_str(), l.rel_err, l.max_abs);
  if (l.sign_agreement >= 0) s += report_line(", sign agreement %.4f", l.sign_agreement);
  if (l.cpu_rel_err >= 0) s += report_line("; CPU fp32 vs golden %.1e", l.cpu_rel_err);
  s += report_line("  [tolerance %.0e] %s  %s", kCudaShapeGoldenTolerance, l.ok ? "ok" : "FAIL", l.note.c_str());
  return s;
}

}  // namespace cubeforge
