// The encoder path from an arbitrary mesh (reference §9 steps 1-2, encoder_input.h): normalisation, area-weighted
// sampling with face normals, face filtering, bad meshes, and a round trip through the shipped default model's
// encoder (tokens → mesh → tokens → mesh keeps the shape).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cubeforge/cube3d.h"
#include "cubeforge/encoder_input.h"
#include "cubeforge/error.h"
#include "cubeforge/mesh_metrics.h"
#include "cubeforge/model_config.h"
#include "cubeforge/shape_model.h"
#include "test_util.h"

namespace {

using cubeforge::EncoderInput;
using cubeforge::EncoderInputOptions;
using cubeforge::Mesh;
using cubeforge::Vec3;

// Axis-aligned box [lo, lo + size], outward (counter-clockwise) faces.
Mesh box(Vec3 lo, Vec3 size) {
  Mesh m;
  for (int i = 0; i < 8; ++i)
    m.positions.push_back({lo[0] + ((i & 1) ? size[0] : 0.f), lo[1] + ((i & 2) ? size[1] : 0.f),
                           lo[2] + ((i & 4) ? size[2] : 0.f)});
  const uint32_t q[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (const auto& f : q) {
    m.triangles.push_back({f[0], f[1], f[2]});
    m.triangles.push_back({f[0], f[2], f[3]});
  }
  return m;
}

TEST(EncoderInput, NormalizesTheBoundingBoxAndSamplesOnTheFacesWithOutwardNormals) {
  const Mesh m = box({10.f, -3.f, 5.f}, {2.f, 4.f, 6.f});
  const EncoderInput in = cubeforge::make_encoder_input(m);
  ASSERT_EQ(in.points.size(), 8192u);
  ASSERT_EQ(in.normals.size(), 8192u);
  EXPECT_EQ(in.faces_used, 12u);
  EXPECT_NEAR(in.center[0], 11.f, 1e-5);
  EXPECT_NEAR(in.center[1], -1.f, 1e-5);
  EXPECT_NEAR(in.center[2], 8.f, 1e-5);
  EXPECT_NEAR(in.scale, 1.92f / 6.f, 1e-6);
  const float half[3] = {0.32f, 0.64f, 0.96f};  // the longest side spans [-0.96, 0.96]
  Vec3 lo{1, 1, 1}, hi{-1, -1, -1};
  for (size_t i = 0; i < in.points.size(); ++i) {
    const Vec3 &p = in.points[i], &n = in.normals[i];
    int axis = -1;
    for (int q = 0; q < 3; ++q) {
      EXPECT_LE(std::fabs(p[q]), half[q] + 1e-5f);
      lo[q] = std::min(lo[q], p[q]);
      hi[q] = std::max(hi[q], p[q]);
      if (std::fabs(n[q]) > 0.5f) axis = q;
    }
    ASSERT_GE(axis, 0);
    EXPECT_NEAR(std::fabs(n[axis]), 1.f, 1e-6);          // unit, axis-aligned
    EXPECT_NEAR(p[axis], n[axis] * half[axis], 1e-5);      // on the face the normal points out of
  }
  for (int q = 0; q < 3; ++q) {  // 8192 points reach the box's extent on every axis
    EXPECT_LT(lo[q], -0.9f * half[q]);
    EXPECT_GT(hi[q], 0.9f * half[q]);
  }
  // back into the input's frame
  Mesh pts;
  pts.positions = in.points;
  cubeforge::to_input_frame(pts, in);
  for (const auto& p : pts.positions) {
    EXPECT_GE(p[0], 10.f - 1e-4f);
    EXPECT_LE(p[0], 12.f + 1e-4f);
    EXPECT_GE(p[2], 5.f - 1e-4f);
    EXPECT_LE(p[2], 11.f + 1e-4f);
  }
}

TEST(EncoderInput, ChoosesFacesByArea) {
  // two disjoint triangles, the second with 3x the area: it should get ~3/4 of the points
  Mesh m;
  const float s = std::sqrt(3.f);
  m.positions = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {5, 0, 1}, {5 + s, 0, 1}, {5, s, 1}};
  m.triangles = {{0, 1, 2}, {3, 4, 5}};
  EncoderInputOptions o;
  o.seed = 7;
  const EncoderInput in = cubeforge::make_encoder_input(m, o);
  size_t big = 0;
  const float split = (3.f - in.center[0]) * in.scale;  // x = 3 separates the triangles
  for (const auto& p : in.points) big += p[0] > split;
  // binomial(8192, 0.75): sd 0.0048; 4 sd
  EXPECT_NEAR(double(big) / in.points.size(), 0.75, 0.02);
  for (const auto& n : in.normals) EXPECT_NEAR(n[2], 1.f, 1e-6);  // both face +z
}

TEST(EncoderInput, DropsDegenerateAndDuplicateFacesAndSamplesTheRestAsBefore) {
  const Mesh clean = box({0.f, 0.f, 0.f}, {1.f, 2.f, 3.f});
  Mesh dirty = clean;
  dirty.positions.push_back({0.5f, 0.f, 0.f});                   // 8: on the edge 0-1
  dirty.triangles.insert(dirty.triangles.begin() + 3, {0, 0, 5});  // repeated corner
  dirty.triangles.insert(dirty.triangles.begin() + 6, {0, 8, 1});  // collinear: no area
  dirty.triangles.push_back({dirty.triangles[4][2], dirty.triangles[4][0], dirty.triangles[4][1]});  // duplicate
  const EncoderInput a = cubeforge::make_encoder_input(clean), b = cubeforge::make_encoder_input(dirty);
  EXPECT_EQ(b.faces_used, 12u);
  EXPECT_EQ(b.faces_degenerate, 2u);
  EXPECT_EQ(b.faces_duplicate, 1u);
  // the kept faces, in their order, are the clean mesh's: the same points for the same seed
  EXPECT_EQ(a.points, b.points);
  EXPECT_EQ(a.normals, b.normals);
  EXPECT_EQ(a.scale, b.scale);
}

TEST(EncoderInput, IsDeterministicForASeed) {
  const Mesh m = box({0.f, 0.f, 0.f}, {1.f, 1.f, 1.f});
  EncoderInputOptions o;
  o.points = 500;
  const EncoderInput a = cubeforge::make_encoder_input(m, o), b = cubeforge::make_encoder_input(m, o);
  EXPECT_EQ(a.points, b.points);
  o.seed = 1;
  const EncoderInput c = cubeforge::make_encoder_input(m, o);
  EXPECT_EQ(c.points.size(), 500u);
  EXPECT_NE(a.points, c.points);
}

TEST(EncoderInput, RejectsMeshesItCannotSample) {
  const Mesh good = box({0.f, 0.f, 0.f}, {1.f, 1.f, 1.f});
  EXPECT_THROW(cubeforge::make_encoder_input(Mesh{}), cubeforge::Error);
  Mesh bad_index = good;
  bad_index.triangles[2][1] = 8;
  EXPECT_THROW(cubeforge::make_encoder_input(bad_index), cubeforge::Error);
  Mesh nan = good;
  nan.positions[3][1] = std::nanf("");
  EXPECT_THROW(cubeforge::make_encoder_input(nan), cubeforge::Error);
  Mesh flat;
  flat.positions = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  flat.triangles = {{0, 1, 2}, {0, 0, 1}};
  try {
    cubeforge::make_encoder_input(flat);
    ADD_FAILURE() << "a mesh of degenerate faces was accepted";
  } catch (const cubeforge::Error& e) {
    EXPECT_NE(std::string(e.what()).find("degenerate"), std::string::npos) << e.what();
  }
  Mesh huge;  // one triangle with finite corners 6e38 apart: its extent overflows a float
  huge.positions = {{-3e38f, 0, 0}, {3e38f, 0, 0}, {0, 3e38f, 0}};
  huge.triangles = {{0, 1, 2}};
  EXPECT_THROW(cubeforge::make_encoder_input(huge), cubeforge::Error);
  EncoderInputOptions none;
  none.points = 0;
  EXPECT_THROW(cubeforge::make_encoder_input(good, none), cubeforge::Error);
}

// The shipped default model: decode a reference token list, feed the mesh through the encoder path, decode again.
// The shape must survive (close to the first mesh, far closer than another prompt's shape) and so must a good part
// of the tokens. Measured: 29 of 64 tokens, Chamfer 0.023 (the tree 0.224); with the normals flipped the same round
// trip gives 18 tokens and 0.040, so the bounds below also catch a wrong normal orientation.
TEST(EncoderInput, DefaultModelRoundTripKeepsTheShape) {
  const std::string dir = cftest::source_dir() + "/assets/default-model";
  auto model = cubeforge::Cube3D::load(cubeforge::ModelFiles::from_directory(dir));
  std::ifstream f(dir + "/reference_tokens.json");
  ASSERT_TRUE(f) << dir;
  const nlohmann::json ref = nlohmann::json::parse(f);
  const std::vector<int> chair = ref["cases"][0]["tokens"].get<std::vector<int>>();
  const std::vector<int> tree = ref["cases"][1]["tokens"].get<std::vector<int>>();
  cubeforge::MeshOptions mo;
  mo.resolution_base = 6;
  const Mesh chair_mesh = model->tokens_to_mesh(chair, mo), tree_mesh = model->tokens_to_mesh(tree, mo);
  ASSERT_FALSE(chair_mesh.empty());
  ASSERT_FALSE(tree_mesh.empty());

  const EncoderInput in = cubeforge::make_encoder_input(chair_mesh);
  const std::vector<int> ids = model->shape_model().encode(in.points, in.normals);
  ASSERT_EQ(ids.size(), chair.size());
  size_t same = 0;
  for (size_t i = 0; i < ids.size(); ++i) same += ids[i] == chair[i];
  Mesh back = model->tokens_to_mesh(ids, mo);
  ASSERT_FALSE(back.empty());
  cubeforge::to_input_frame(back, in);
  const double d_back = cubeforge::chamfer_distance(chair_mesh, back, 20000).chamfer;
  const double d_tree = cubeforge::chamfer_distance(chair_mesh, tree_mesh, 20000).chamfer;
  std::printf("round trip: %zu of %zu tokens kept, Chamfer %.4f (to the tree: %.4f)\n", same, ids.size(), d_back,
              d_tree);
  EXPECT_GE(same, ids.size() * 3 / 8);
  EXPECT_LT(d_back, 0.035);
  EXPECT_LT(d_back, d_tree / 3);
}

}  // namespace
