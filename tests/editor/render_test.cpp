// Headless renderer tests (EGL surfaceless + FBO, no X): a fixed scene compared against a golden PNG with a
// tolerance, plus direct pixel checks (background, lit part, selection outline, ghost blending, screenshot file).
// Set CUBEFORGE_UPDATE_GOLDENS=1 to rewrite the golden images after an intended change.
#include <gtest/gtest.h>

#include "core/document.h"
#include "core_test_util.h"
#include "render/egl_context.h"
#include "render/renderer.h"

#include <stb_image.h>
#include <stb_image_write.h>

#include <cstdlib>

using namespace cubeforge::editor;

namespace {

constexpr int W = 320, H = 200;

struct RenderFixture : ::testing::Test {
  static inline HeadlessGL* gl = nullptr;
  static inline Renderer* renderer = nullptr;
  static inline std::string error;
  static void SetUpTestSuite() {
    gl = new HeadlessGL();
    if (!gl->create(&error)) return;
    renderer = new Renderer();
    if (!renderer->init(&error)) {
      delete renderer;
      renderer = nullptr;
      return;
    }
    renderer->resize(W, H);
  }
  static void TearDownTestSuite() {
    delete renderer;
    renderer = nullptr;
    delete gl;
    gl = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(renderer) << error; }

  Log log{false};
  Document doc{log};
  Camera cam;
  RenderOptions opt;
  EntityId block = 0, ball = 0;

  void build() {
    block = doc.insert_part(PartKind::Block);
    doc.modify(block, "c", [](Entity& e) { e.color = {0.85f, 0.2f, 0.15f}; });
    ball = doc.insert_part(PartKind::Sphere, Vec3{3.5f, 0.f, 0.f});
    doc.modify(ball, "c", [](Entity& e) { e.color = {0.2f, 0.7f, 0.3f}; });
    doc.selection().clear();
    cam.target = {1.5f, 0.5f, 0.f};
    cam.yaw_deg = 30.f;
    cam.pitch_deg = 25.f;
    cam.distance = 9.f;
  }
  std::vector<uint8_t> draw(const std::vector<GhostMesh>& ghosts = {}) {
    renderer->render(doc.scene(), doc.selection(), cam, opt, ghosts);
    return renderer->read_pixels();
  }
  static glm::ivec3 at(const std::vector<uint8_t>& px, int x, int y) {
    const uint8_t* p = &px[(static_cast<size_t>(y) * W + x) * 4];
    return {p[0], p[1], p[2]};
  }
  glm::ivec2 screen(glm::vec3 world) const {
    glm::vec3 s = cam.project(world, W, H);
    return {int(s.x), int(s.y)};
  }
};

}  // namespace

TEST_F(RenderFixture, BackgroundAndLitParts) {
  build();
  auto px = draw();
  glm::ivec3 bg = at(px, 2, 2);
  EXPECT_NEAR(bg.r, int(0.18f * 255), 2);
  EXPECT_NEAR(bg.g, int(0.20f * 255), 2);
  EXPECT_NEAR(bg.b, int(0.23f * 255), 2);
  glm::ivec2 top = screen({-1.f, 1.f, 0.5f});  // top face of the red block: lit from above
  glm::ivec3 c = at(px, top.x, top.y);
  EXPECT_GT(c.r, 150);
  EXPECT_LT(c.g, 80);
  glm::ivec2 s = screen({3.5f, 1.f, 0.f});
  glm::ivec3 g = at(px, s.x, s.y);
  EXPECT_GT(g.g, g.r + 40);
  EXPECT_EQ(renderer->stats().triangles, doc.scene().triangle_count());
}

TEST_F(RenderFixture, MatchesGoldenWithTolerance) {
  build();
  opt.wireframe = false;
  auto px = draw();
  std::string golden = std::string(CF_EDITOR_GOLDEN_DIR) + "/render_basic.png";
  const char* update = std::getenv("CUBEFORGE_UPDATE_GOLDENS");
  if (update && std::string(update) == "1") {
    ASSERT_TRUE(stbi_write_png(golden.c_str(), W, H, 4, px.data(), W * 4));
    GTEST_SKIP() << "golden rewritten: " << golden;
  }
  int gw = 0, gh = 0, gc = 0;
  uint8_t* ref = stbi_load(golden.c_str(), &gw, &gh, &gc, 4);
  ASSERT_TRUE(ref) << "missing golden " << golden << " (run with CUBEFORGE_UPDATE_GOLDENS=1)";
  ASSERT_EQ(gw, W);
  ASSERT_EQ(gh, H);
  size_t bad = 0;
  for (size_t i = 0; i < px.size(); i += 4) {
    int d = 0;
    for (int k = 0; k < 3; ++k) d = std::max(d, std::abs(int(px[i + k]) - int(ref[i + k])));
    if (d > 24) ++bad;
  }
  stbi_image_free(ref);
  double frac = double(bad) / (W * H);
  EXPECT_LT(frac, 0.005) << bad << " pixels differ by more than 24/255";
}

TEST_F(RenderFixture, SelectionOutlineAndWireframe) {
  build();
  auto count_orange = [&](const std::vector<uint8_t>& px) {
    size_t n = 0;
    for (size_t i = 0; i < px.size(); i += 4)
      if (px[i] > 200 && px[i + 1] > 120 && px[i + 1] < 190 && px[i + 2] < 70) ++n;
    return n;
  };
  size_t before = count_orange(draw());
  doc.selection().select(ball);
  size_t after = count_orange(draw());
  EXPECT_GT(after, before + 50);
  doc.selection().clear();
  opt.wireframe = true;
  auto wire = draw();
  opt.wireframe = false;
  auto solid = draw();
  size_t diff = 0;
  for (size_t i = 0; i < wire.size(); i += 4) diff += wire[i] != solid[i];
  EXPECT_GT(diff, 100u);
}

TEST_F(RenderFixture, GhostMeshIsTranslucent) {
  build();
  auto base = draw();
  GhostMesh gh{make_part_mesh(PartKind::Block), glm::translate(glm::mat4(1.f), glm::vec3(1.5f, 2.5f, 0.f)),
               {0.2f, 0.5f, 1.f, 0.4f}};
  auto with = draw({gh});
  glm::ivec2 p = screen({1.5f, 2.5f, 0.f});
  glm::ivec3 a = at(base, p.x, p.y), b = at(with, p.x, p.y);
  EXPECT_GT(b.b, a.b + 20);       // bluer
  EXPECT_LT(b.b, 255 * 0.9);      // but not opaque full blue: blended with the background
  EXPECT_GT(b.r, 10);
}

TEST_F(RenderFixture, ScreenshotWritesPng) {
  build();
  draw();
  cftest::TempDir dir;
  renderer->save_png(dir / "shot.png");
  int w = 0, h = 0, c = 0;
  uint8_t* img = stbi_load((dir / "shot.png").c_str(), &w, &h, &c, 4);
  ASSERT_TRUE(img);
  EXPECT_EQ(w, W);
  EXPECT_EQ(h, H);
  stbi_image_free(img);
  EXPECT_THROW(renderer->save_png(dir / "no/dir/shot.png"), cubeforge::Error);
}

TEST_F(RenderFixture, GpuBuffersFreedWhenMeshDropped) {
  build();
  auto mesh = std::make_shared<cubeforge::Mesh>(*cftest::tetra());
  draw({GhostMesh{mesh, glm::mat4(1.f), {1, 1, 1, 0.5f}}});
  size_t with = renderer->stats().gpu_meshes;
  mesh.reset();
  for (int i = 0; i < 61; ++i) draw();
  EXPECT_LT(renderer->stats().gpu_meshes, with);
}
