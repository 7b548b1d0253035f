// Golden check of the shape stage against ../shared/golden/cube3d (fp32 reference): latents, query_logits,
// grid_res4_logits (dense reference grid through grid.h) and encoder_indices. Used by the tests and, through the
// GoldenReport overload declared in pipeline/shape_golden.h, by the golden runner (`cubeforge-gen golden`).
#include <algorithm>
#include <cmath>
#include <string>

#include "cubeforge/error.h"
#include "cubeforge/golden.h"
#include "cubeforge/safetensors.h"
#include "cubeforge/shape_model.h"
#include "pipeline/shape_golden.h"

namespace cubeforge {

namespace {

ShapeGoldenLine float_line(const std::string& name, const float* out, const std::vector<float>& ref, double tol) {
  ShapeGoldenLine l;
  l.tensor = name;
  l.rel_err = relative_l2(out, ref.data(), ref.size());
  l.tolerance = tol;
  l.ok = std::isfinite(l.rel_err) && l.rel_err <= tol;
  l.note = std::to_string(ref.size()) + " values";
  return l;
}

}  // namespace

std::vector<ShapeGoldenLine> check_shape_golden(const std::string& dir, const std::string& name, double tolerance) {
  const std::string base = dir + "/" + name;
  const ModelConfig cfg = load_model_config(base + "_config.json");
  const auto model = ShapeModel::load(cfg.shape, base + "_shape.safetensors");
  const SafeTensors io = SafeTensors::open(base + "_io.safetensors");
  const int N = cfg.shape.num_encoder_latents, W = cfg.shape.width;
  std::vector<ShapeGoldenLine> lines;

  const std::vector<int64_t> ids64 = io.to_i64("token_ids", {1, N});
  const std::vector<int> ids(ids64.begin(), ids64.end());
  const Latents lat = model->decode_tokens(ids);
  lines.push_back(float_line("latents", lat.data.data(), io.to_f32("latents", {1, N, W}), tolerance));

  const auto dec = model->occupancy(lat);
  const auto& qinfo = io.info("query_points");
  if (qinfo.shape.size() != 3 || qinfo.shape[0] != 1 || qinfo.shape[2] != 3)
    throw Error(io.path() + ": query_points has shape " + shape_str(qinfo.shape) + ", expected [1, Q, 3]");
  const int64_t Q = qinfo.shape[1];
  const std::vector<float> qp = io.to_f32("query_points");
  std::vector<float> ql(Q);
  dec->evaluate(qp.data(), size_t(Q), ql.data());
  lines.push_back(float_line("query_logits", ql.data(), io.to_f32("query_logits", {1, Q}), tolerance));

  const GridValues g = dec->grid_dense(4);
  lines.push_back(float_line("grid_res4_logits", g.values.data(), io.to_f32("grid_res4_logits", {g.M, g.M, g.M}),
                             tolerance));

  const auto& pinfo = io.info("encoder_point_cloud");
  if (pinfo.shape.size() != 3 || pinfo.shape[0] != 1 || pinfo.shape[2] != 6)
    throw Error(io.path() + ": encoder_point_cloud has shape " + shape_str(pinfo.shape) + ", expected [1, P, 6]");
  const std::vector<float> pc = io.to_f32("encoder_point_cloud");
  std::vector<Vec3> pts(pinfo.shape[1]), nrm(pinfo.shape[1]);
  for (size_t i = 0; i < pts.size(); ++i) {
    pts[i] = {pc[6 * i], pc[6 * i + 1], pc[6 * i + 2]};
    nrm[i] = {pc[6 * i + 3], pc[6 * i + 4], pc[6 * i + 5]};
  }
  const std::vector<int> enc = model->encode(pts, nrm);
  const std::vector<int64_t> ref = io.to_i64("encoder_indices", {1, N});
  int differ = 0;
  for (int i = 0; i < N; ++i) differ += enc[i] != ref[i];
  ShapeGoldenLine l;
  l.tensor = "encoder_indices";
  l.rel_err = double(differ) / N;
  l.tolerance = 0;
  l.ok = differ == 0;
  l.note = std::to_string(differ) + "/" + std::to_string(N) + " ids differ";
  lines.push_back(l);
  return lines;
}

// Golden runner hook: the shape-stage lines of a case. The reference's token_ids are decoded (not the GPT's own
// tokens, which the runner checks separately), so a GPT mismatch does not hide the shape stage's agreement.
void check_shape_golden(GoldenReport& r, const std::string& dir, const std::string& name, const ModelConfig&,
                        const SafeTensors&, const std::vector<int>&) {
  for (const ShapeGoldenLine& l : check_shape_golden(dir, name, kGoldenTolerance)) {
    GoldenLine g;
    g.tensor = l.tensor;
    g.rel_err = l.rel_err;
    g.ok = l.ok;
    g.note = l.note;
    if (l.tensor != "encoder_indices") r.max_rel_err = std::max(r.max_rel_err, l.rel_err);
    r.lines.push_back(g);
  }
}

}  // namespace cubeforge
