// Viewport renderer (OpenGL 3.3 core): draws the scene into its own framebuffer (colour texture + depth) with
// directional + ambient lighting and per-vertex colour, optional wireframe overlay, selection outline, ground grid
// and axes, then translucent ghost meshes and lines from overlays. GPU buffers are cached per shared mesh and
// freed when the mesh is gone. Must only be used on the thread that owns the GL context.
#pragma once
#include "camera.h"
#include "core/scene.h"
#include "core/selection.h"

#include <unordered_map>

namespace cubeforge::editor {

struct RenderOptions {
  bool wireframe = false;
  bool grid = true;
  bool axes = true;
  glm::vec3 background{0.18f, 0.20f, 0.23f};
  glm::vec3 light_dir{0.45f, 1.0f, 0.35f};
  float ambient = 0.35f;
};

struct GhostMesh {
  std::shared_ptr<const Mesh> mesh;
  glm::mat4 model{1.f};
  glm::vec4 rgba{0.4f, 0.7f, 1.f, 0.4f};
};

struct LineVertex {
  glm::vec3 pos;
  glm::vec4 color;
};

struct RenderStats {
  size_t draw_calls = 0;
  size_t triangles = 0;
  size_t gpu_meshes = 0;
};

class Renderer {
 public:
  Renderer() = default;
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  bool init(std::string* error);  // compiles shaders; needs a current GL 3.3 context with glad loaded
  void resize(int width, int height);
  int width() const { return width_; }
  int height() const { return height_; }
  unsigned color_texture() const { return color_tex_; }

  void render(const Scene& scene, const Selection& selection, const Camera& camera, const RenderOptions& opt,
              const std::vector<GhostMesh>& ghosts = {}, const std::vector<LineVertex>& lines = {});
  const RenderStats& stats() const { return stats_; }

  // RGBA8, rows top to bottom.
  std::vector<uint8_t> read_pixels() const;
  // Writes the last frame to PNG, atomically (throws cubeforge::Error).
  void save_png(const std::string& path) const;

 private:
  struct GpuMesh {
    std::weak_ptr<const Mesh> owner;
    unsigned vao = 0, vbo = 0, ebo = 0;
    int count = 0;
    uint64_t last_frame = 0;
  };
  GpuMesh& gpu_mesh(const std::shared_ptr<const Mesh>& mesh);
  void release(GpuMesh& g);
  void collect_garbage();
  void draw_lines(const std::vector<LineVertex>& lines, const glm::mat4& vp, bool depth_test);
  void build_grid();

  unsigned mesh_prog_ = 0, line_prog_ = 0;
  unsigned fbo_ = 0, color_tex_ = 0, depth_rb_ = 0;
  unsigned line_vao_ = 0, line_vbo_ = 0;
  size_t line_capacity_ = 0;
  int width_ = 0, height_ = 0;
  uint64_t frame_ = 0;
  std::unordered_map<const Mesh*, GpuMesh> meshes_;
  std::vector<LineVertex> grid_;
  RenderStats stats_;
  struct {
    int model, viewproj, normal_mat, tint, light_dir, ambient, mode, flat, offset;
  } mu_{};
  int line_vp_ = -1;
};

// RGBA8 pixels (rows top to bottom) to a PNG file, written atomically: on failure the old file is untouched
// (throws cubeforge::Error naming the path).
void write_png(const std::string& path, int w, int h, const std::vector<uint8_t>& rgba);
// The window's frame being drawn (the default framebuffer's back buffer: viewport and panels), RGBA8, rows top to
// bottom. Call when the frame is drawn, before the buffer swap, with the framebuffer's size.
std::vector<uint8_t> read_window_pixels(int w, int h);

}  // namespace cubeforge::editor
