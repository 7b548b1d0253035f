// Shape stage (ShapeModel / OccupancyDecoder): golden latents, query_logits, grid_res4_logits, encoder_indices for
// tiny_v01 and tiny_v05; adaptive grid vs dense; live-preview decodes; bad input (ids out of range, wrong count,
// corrupt/missing/incomplete checkpoint, bad latents) → cubeforge::Error; cancellation.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cubeforge/error.h"
#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/safetensors.h"
#include "cubeforge/shape_model.h"
#include "shape/shape_kernels.h"
#include "test_util.h"

using namespace cubeforge;

namespace {

struct Case {
  ModelConfig cfg;
  std::unique_ptr<ShapeModel> model;
  SafeTensors io;
  std::vector<int> tokens;
};

Case load_case(const std::string& name) {
  const std::string base = cftest::golden_dir() + "/" + name;
  Case c;
  c.cfg = load_model_config(base + "_config.json");
  c.model = ShapeModel::load(c.cfg.shape, base + "_shape.safetensors");
  c.io = SafeTensors::open(base + "_io.safetensors");
  for (int64_t t : c.io.to_i64("token_ids")) c.tokens.push_back(int(t));
  return c;
}

double rel_l2(const std::vector<float>& out, const std::vector<float>& ref) {
  EXPECT_EQ(out.size(), ref.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < std::min(out.size(), ref.size()); ++i) {
    num += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

template <class F>
std::string expect_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected cubeforge::Error";
  return "";
}

class ShapeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ShapeGolden, LatentsMatch) {
  Case c = load_case(GetParam());
  const Latents lat = c.model->decode_tokens(c.tokens);
  EXPECT_EQ(lat.count, c.cfg.shape.num_encoder_latents);
  EXPECT_EQ(lat.width, c.cfg.shape.width);
  EXPECT_LT(rel_l2(lat.data, c.io.to_f32("latents")), 1e-4);
}

TEST_P(ShapeGolden, QueryLogitsMatch) {
  Case c = load_case(GetParam());
  const auto dec = c.model->occupancy(c.model->decode_tokens(c.tokens));
  const std::vector<float> qp = c.io.to_f32("query_points");
  const std::vector<float> ref = c.io.to_f32("query_logits");
  std::vector<float> out(ref.size());
  for (int batch : {256, 7, 4096}) {  // batch split must not change anything beyond rounding
    dec->set_batch_size(batch);
    std::fill(out.begin(), out.end(), NAN);
    dec->evaluate(qp.data(), ref.size(), out.data());
    EXPECT_LT(rel_l2(out, ref), 1e-4) << "batch " << batch;
  }
  EXPECT_EQ(dec->points_evaluated(), 3 * ref.size());
}

TEST_P(ShapeGolden, GridRes4LogitsMatch) {
  Case c = load_case(GetParam());
  const auto dec = c.model->occupancy(c.model->decode_tokens(c.tokens));
  const GridValues g = dec->grid_dense(4);
  ASSERT_EQ(g.M, 17);
  EXPECT_LT(rel_l2(g.values, c.io.to_f32("grid_res4_logits")), 1e-4);
  // The per-axis table path (grid points) and the generic path (any point) agree.
  const std::vector<float> ax = grid_axis_coords(4);
  std::vector<float> xyz, generic(g.values.size());
  for (int i = 0; i < 17; ++i)
    for (int j = 0; j < 17; ++j)
      for (int k = 0; k < 17; ++k) {
        // nudge by one ulp so the table lookup misses
        xyz.push_back(std::nextafter(ax[i], 0.0f));
        xyz.push_back(ax[j]);
        xyz.push_back(ax[k]);
      }
  dec->evaluate(xyz.data(), generic.size(), generic.data());
  EXPECT_LT(rel_l2(generic, g.values), 1e-5);
}

TEST_P(ShapeGolden, EncoderIndicesMatch) {
  Case c = load_case(GetParam());
  const std::vector<float> pc = c.io.to_f32("encoder_point_cloud");
  std::vector<Vec3> pts, nrm;
  for (size_t i = 0; i < pc.size() / 6; ++i) {
    pts.push_back({pc[6 * i], pc[6 * i + 1], pc[6 * i + 2]});
    nrm.push_back({pc[6 * i + 3], pc[6 * i + 4], pc[6 * i + 5]});
  }
  const std::vector<int> ids = c.model->encode(pts, nrm);
  std::vector<int> ref;
  for (int64_t t : c.io.to_i64("encoder_indices")) ref.push_back(int(t));
  EXPECT_EQ(ids, ref);
}

TEST_P(ShapeGolden, CheckShapeGoldenAllOk) {
  const auto lines = check_shape_golden(cftest::golden_dir(), GetParam());
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& l : lines) EXPECT_TRUE(l.ok) << l.tensor << " rel_err " << l.rel_err << " " << l.note;
}

TEST_P(ShapeGolden, AdaptiveGridMatchesDense) {
  Case c = load_case(GetParam());
  const auto dec = c.model->occupancy(c.model->decode_tokens(c.tokens));
  const GridValues dense = dec->grid_dense(6);
  AdaptiveOptions ao;
  ao.coarse_rb = 4;
  ao.margin = 0.0f;  // sign changes only (dilated by one cell)
  const GridValues ad = dec->grid_adaptive(6, ao);
  EXPECT_LT(ad.points_evaluated, dense.points_evaluated / 2);
  EXPECT_GT(occupancy_iou(ad, dense), 0.999);
  for (size_t n = 0; n < dense.values.size(); ++n)
    if (ad.was_evaluated(n)) ASSERT_NEAR(ad.values[n], dense.values[n], 1e-5f);
  const Mesh md = marching_cubes(dense), ma = marching_cubes(ad);
  EXPECT_GT(md.vertex_count(), 0u);
  EXPECT_EQ(ma.vertex_count(), md.vertex_count());
  EXPECT_EQ(ma.face_count(), md.face_count());
}

TEST_P(ShapeGolden, ResolutionBaseOutOfRangeIsAnError) {
  Case c = load_case(GetParam());
  const auto dec = c.model->occupancy(c.model->decode_tokens(c.tokens));
  EXPECT_THROW(dec->grid_dense(3), Error);
  EXPECT_THROW(dec->grid_dense(10), Error);
  EXPECT_THROW(dec->grid_adaptive(10), Error);
}

TEST_P(ShapeGolden, PreviewWithAllTokensIsTheFinalDecode) {
  Case c = load_case(GetParam());
  const Latents full = c.model->decode_tokens(c.tokens);
  for (PreviewFill f : {PreviewFill::Truncate, PreviewFill::MeanCode, PreviewFill::RepeatPrefix, PreviewFill::ZeroCode}) {
    const Latents p = c.model->decode_preview(c.tokens, f);
    EXPECT_EQ(p.data, full.data) << to_string(f);
  }
  const int N = int(c.tokens.size());
  const std::vector<int> half(c.tokens.begin(), c.tokens.begin() + N / 2);
  EXPECT_EQ(c.model->decode_preview(half, PreviewFill::Truncate).count, N / 2);
  EXPECT_EQ(c.model->decode_preview(half, PreviewFill::MeanCode).count, N);
  // a truncated preview still gives an occupancy field
  const auto dec = c.model->occupancy(c.model->decode_preview(half, PreviewFill::Truncate));
  EXPECT_EQ(dec->latent_count(), N / 2);
  EXPECT_EQ(dec->grid_dense(4).values.size(), 17u * 17 * 17);
}

TEST_P(ShapeGolden, CodebookIsNormalized) {
  Case c = load_case(GetParam());
  const std::vector<float> C = c.model->codebook();
  const int E = c.cfg.shape.embed_dim;
  ASSERT_EQ(C.size(), size_t(c.cfg.shape.num_codes) * E);
  const SafeTensors st = SafeTensors::open(cftest::golden_dir() + "/" + GetParam() + "_shape.safetensors");
  const std::vector<float> nw = st.to_f32("bottleneck.block.norm.weight");
  const std::vector<float> cb = st.to_f32("bottleneck.block.codebook.weight");
  const std::vector<float> cw = st.to_f32("bottleneck.block.cb_weight"), cbb = st.to_f32("bottleneck.block.cb_bias");
  for (int k = 0; k < c.cfg.shape.num_codes; ++k) {
    double ss = 0;
    for (int e = 0; e < E; ++e) {
      const double v = double(cb[size_t(k) * E + e]) * cw[e] + cbb[e];
      ss += v * v;
    }
    const double r = 1.0 / std::sqrt(ss / E + 1e-5);
    for (int e = 0; e < E; ++e) {
      const double ref = (double(cb[size_t(k) * E + e]) * cw[e] + cbb[e]) * r * nw[e];
      ASSERT_NEAR(C[size_t(k) * E + e], ref, 1e-5 * std::max(1.0, std::fabs(ref))) << k << "," << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, ShapeGolden, ::testing::Values("tiny_v01", "tiny_v05"));

class ShapeBadInput : public ::testing::Test {
 protected:
  Case c = load_case("tiny_v01");
};

TEST_F(ShapeBadInput, TokenIdOutOfRange) {
  auto ids = c.tokens;
  ids[3] = c.cfg.shape.num_codes;
  EXPECT_NE(expect_error([&] { c.model->decode_tokens(ids); }).find("out of range"), std::string::npos);
  ids[3] = -1;
  EXPECT_NE(expect_error([&] { c.model->decode_tokens(ids); }).find("position 3"), std::string::npos);
  EXPECT_NE(expect_error([&] { c.model->decode_preview({0, 1, 99999}); }).find("out of range"), std::string::npos);
}

TEST_F(ShapeBadInput, WrongTokenCount) {
  auto ids = c.tokens;
  ids.pop_back();
  EXPECT_NE(expect_error([&] { c.model->decode_tokens(ids); }).find("expected 16 token ids, got 15"),
            std::string::npos);
  ids = c.tokens;
  ids.push_back(0);
  expect_error([&] { c.model->decode_tokens(ids); });
  expect_error([&] { c.model->decode_tokens({}); });
  expect_error([&] { c.model->decode_preview({}); });
  ids.push_back(0);
  expect_error([&] { c.model->decode_preview(ids); });
}

TEST_F(ShapeBadInput, MissingAndCorruptShapeFile) {
  const auto dir = cftest::temp_dir("shape_bad");
  EXPECT_NE(expect_error([&] { ShapeModel::load(c.cfg.shape, (dir / "nope.safetensors").string()); }).find("nope"),
            std::string::npos);
  // truncated copy of the real file
  const std::string src = cftest::golden_dir() + "/tiny_v01_shape.safetensors";
  std::ifstream in(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  {
    std::ofstream out(dir / "trunc.safetensors", std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size() / 2));
  }
  expect_error([&] { ShapeModel::load(c.cfg.shape, (dir / "trunc.safetensors").string()); });
  {
    std::ofstream out(dir / "garbage.safetensors", std::ios::binary);
    out << "this is not a safetensors file at all";
  }
  expect_error([&] { ShapeModel::load(c.cfg.shape, (dir / "garbage.safetensors").string()); });
  // the v0.5 checkpoint with the v0.1 config: wrong shapes / counts are named
  const std::string msg =
      expect_error([&] { ShapeModel::load(c.cfg.shape, cftest::golden_dir() + "/tiny_v05_shape.safetensors"); });
  EXPECT_NE(msg.find("shape"), std::string::npos) << msg;
  std::filesystem::remove_all(dir);
}

TEST_F(ShapeBadInput, MissingOrExtraTensor) {
  const auto dir = cftest::temp_dir("shape_keys");
  const SafeTensors st = SafeTensors::open(cftest::golden_dir() + "/tiny_v01_shape.safetensors");
  std::map<std::string, cftest::RawTensor> t;
  for (const auto& n : st.names()) {
    const auto& info = st.info(n);
    cftest::RawTensor r;
    r.shape = info.shape;
    r.bytes.assign(reinterpret_cast<const char*>(info.data), info.end - info.begin);
    t[n] = r;
  }
  // embedder stored under another of its names, no alias metadata: still loads
  {
    auto t2 = t;
    t2["occupancy_decoder.embedder.weight"] = t2["embedder.weight"];
    t2.erase("embedder.weight");
    cftest::write_safetensors((dir / "renamed.safetensors").string(), t2);
    auto m = ShapeModel::load(c.cfg.shape, (dir / "renamed.safetensors").string());
    const Latents a = m->decode_tokens(c.tokens), b = c.model->decode_tokens(c.tokens);
    EXPECT_EQ(a.data, b.data);
  }
  {
    auto t2 = t;
    t2.erase("decoder.blocks.1.attn.q_norm.weight");
    cftest::write_safetensors((dir / "missing.safetensors").string(), t2);
    const std::string msg = expect_error([&] { ShapeModel::load(c.cfg.shape, (dir / "missing.safetensors").string()); });
    EXPECT_NE(msg.find("decoder.blocks.1.attn.q_norm.weight"), std::string::npos) << msg;
  }
  {
    auto t2 = t;
    t2["decoder.blocks.7.attn.c_v.bias"] = cftest::f32_tensor({32});
    cftest::write_safetensors((dir / "extra.safetensors").string(), t2);
    const std::string msg = expect_error([&] { ShapeModel::load(c.cfg.shape, (dir / "extra.safetensors").string()); });
    EXPECT_NE(msg.find("decoder.blocks.7"), std::string::npos) << msg;
  }
  std::filesystem::remove_all(dir);
}

TEST_F(ShapeBadInput, BadConfigLatentsAndPointClouds) {
  ShapeConfig bad = c.cfg.shape;
  bad.num_heads = 5;
  expect_error([&] { ShapeModel::load(bad, cftest::golden_dir() + "/tiny_v01_shape.safetensors"); });
  Latents lat = c.model->decode_tokens(c.tokens);
  lat.width = 16;
  expect_error([&] { c.model->occupancy(lat); });
  lat = c.model->decode_tokens(c.tokens);
  lat.data.pop_back();
  expect_error([&] { c.model->occupancy(lat); });
  expect_error([&] { c.model->encode({}, {}); });
  expect_error([&] { c.model->encode({{0, 0, 0}, {1, 0, 0}}, {{0, 0, 1}}); });
  expect_error([&] { c.model->encode({{0, NAN, 0}}, {{0, 0, 1}}); });
  EXPECT_THROW(preview_fill_from_string("bogus"), Error);
  EXPECT_EQ(preview_fill_from_string("truncate"), PreviewFill::Truncate);
}

TEST_F(ShapeBadInput, CancelledEvaluationThrows) {
  const auto dec = c.model->occupancy(c.model->decode_tokens(c.tokens));
  CancelToken cancel;
  cancel.cancel();
  std::vector<float> xyz(3 * 1000, 0.1f), out(1000);
  EXPECT_THROW(dec->evaluate(xyz.data(), 1000, out.data(), &cancel), Cancelled);
  EXPECT_THROW(c.model->decode_tokens(c.tokens, &cancel), Cancelled);
  EXPECT_THROW(dec->grid_dense(5, &cancel), Cancelled);
}

TEST(ShapeKernels, ApproximationsAreAccurate) {
  std::vector<float> x, e, g;
  for (float v = -20.0f; v <= 20.0f; v += 0.0137f) x.push_back(v);
  e = x;
  g = x;
  shape::exp_inplace(e.data(), e.size());
  shape::gelu_inplace(g.data(), g.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double re = std::exp(double(x[i]));
    EXPECT_NEAR(e[i] / re, 1.0, 4e-7) << x[i];
    const double rg = 0.5 * x[i] * std::erfc(-double(x[i]) / std::sqrt(2.0));
    EXPECT_NEAR(g[i], rg, 3e-7 * std::max(1.0, std::fabs(double(x[i])))) << x[i];
  }
}

TEST(ShapeKernels, CarrierFollowsTheReferenceFormula) {
  const std::vector<float> c = shape::fourier_carrier(128);
  ASSERT_EQ(c.size(), 128u);
  for (int k = 0; k < 128; ++k) {
    const double lam = 1.0 - k / 127.0, mu = k / 127.0;
    const double ref = (std::pow(16.0, lam) + mu) * 2.0 * M_PI;
    EXPECT_NEAR(c[k], ref, 2e-5 * ref) << k;
  }
  EXPECT_NEAR(shape::fourier_carrier(8)[0], (1.0 + 0.0) * 2.0 * M_PI, 1e-6);
}

}  // namespace
