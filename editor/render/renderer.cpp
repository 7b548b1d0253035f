// Renderer implementation.
#include "renderer.h"

#include <glad/gl.h>

#include <cubeforge/error.h>
#include <stb_image_write.h>

#include "fileio/atomic_file.h"

#include "cf_editor_shaders.h"

#include <algorithm>
#include <cstring>

namespace cubeforge::editor {
namespace {

unsigned compile(GLenum type, const char* src, std::string* err) {
  unsigned s = glCreateShader(type);
  glShaderSource(s, 1, &src, nullptr);
  glCompileShader(s);
  int ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[2048];
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    if (err) *err = std::string("shader compile failed: ") + log;
    glDeleteShader(s);
    return 0;
  }
  return s;
}

unsigned link(const char* vs, const char* fs, std::string* err) {
  unsigned v = compile(GL_VERTEX_SHADER, vs, err);
  if (!v) return 0;
  unsigned f = compile(GL_FRAGMENT_SHADER, fs, err);
  if (!f) {
    glDeleteShader(v);
    return 0;
  }
  unsigned p = glCreateProgram();
  glAttachShader(p, v);
  glAttachShader(p, f);
  glLinkProgram(p);
  glDeleteShader(v);
  glDeleteShader(f);
  int ok = 0;
  glGetProgramiv(p, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[2048];
    glGetProgramInfoLog(p, sizeof log, nullptr, log);
    if (err) *err = std::string("shader link failed: ") + log;
    glDeleteProgram(p);
    return 0;
  }
  return p;
}

const glm::vec4 kSelectColor(1.0f, 0.62f, 0.1f, 1.f);
const glm::vec4 kWireColor(0.05f, 0.05f, 0.06f, 0.55f);

}  // namespace

Renderer::~Renderer() {
  if (!mesh_prog_) return;  // never initialised (or no context)
  for (auto& [k, g] : meshes_) release(g);
  glDeleteProgram(mesh_prog_);
  glDeleteProgram(line_prog_);
  if (fbo_) glDeleteFramebuffers(1, &fbo_);
  if (color_tex_) glDeleteTextures(1, &color_tex_);
  if (depth_rb_) glDeleteRenderbuffers(1, &depth_rb_);
  if (line_vao_) glDeleteVertexArrays(1, &line_vao_);
  if (line_vbo_) glDeleteBuffers(1, &line_vbo_);
}

bool Renderer::init(std::string* error) {
  mesh_prog_ = link(shaders::editor_mesh_vert, shaders::editor_mesh_frag, error);
  if (!mesh_prog_) return false;
  line_prog_ = link(shaders::editor_line_vert, shaders::editor_line_frag, error);
  if (!line_prog_) return false;
  mu_.model = glGetUniformLocation(mesh_prog_, "u_model");
  mu_.viewproj = glGetUniformLocation(mesh_prog_, "u_viewproj");
  mu_.normal_mat = glGetUniformLocation(mesh_prog_, "u_normal_mat");
  mu_.tint = glGetUniformLocation(mesh_prog_, "u_tint");
  mu_.light_dir = glGetUniformLocation(mesh_prog_, "u_light_dir");
  mu_.ambient = glGetUniformLocation(mesh_prog_, "u_ambient");
  mu_.mode = glGetUniformLocation(mesh_prog_, "u_mode");
  mu_.flat = glGetUniformLocation(mesh_prog_, "u_flat");
  mu_.offset = glGetUniformLocation(mesh_prog_, "u_offset");
  line_vp_ = glGetUniformLocation(line_prog_, "u_viewproj");
  glGenVertexArrays(1, &line_vao_);
  glGenBuffers(1, &line_vbo_);
  glBindVertexArray(line_vao_);
  glBindBuffer(GL_ARRAY_BUFFER, line_vbo_);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, sizeof(LineVertex), reinterpret_cast<void*>(offsetof(LineVertex, pos)));
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, sizeof(LineVertex), reinterpret_cast<void*>(offsetof(LineVertex, color)));
  glBindVertexArray(0);
  build_grid();
  return true;
}

void Renderer::build_grid() {
  grid_.clear();
  const int n = 50;
  for (int i = -n; i <= n; ++i) {
    if (i == 0) continue;  // the axes are drawn there
    float a = (i % 10 == 0) ? 0.32f : 0.14f;
    glm::vec4 c(0.75f, 0.78f, 0.82f, a);
    grid_.push_back({{float(i), 0, -float(n)}, c});
    grid_.push_back({{float(i), 0, float(n)}, c});
    grid_.push_back({{-float(n), 0, float(i)}, c});
    grid_.push_back({{float(n), 0, float(i)}, c});
  }
}

void Renderer::resize(int w, int h) {
  w = std::max(w, 1);
  h = std::max(h, 1);
  if (w == width_ && h == height_ && fbo_) return;
  width_ = w;
  height_ = h;
  if (!fbo_) {
    glGenFramebuffers(1, &fbo_);
    glGenTextures(1, &color_tex_);
    glGenRenderbuffers(1, &depth_rb_);
  }
  glBindTexture(GL_TEXTURE_2D, color_tex_);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glBindTexture(GL_TEXTURE_2D, 0);
  glBindRenderbuffer(GL_RENDERBUFFER, depth_rb_);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH24_STENCIL8, w, h);
  glBindRenderbuffer(GL_RENDERBUFFER, 0);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color_tex_, 0);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_STENCIL_ATTACHMENT, GL_RENDERBUFFER, depth_rb_);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
}

void Renderer::release(GpuMesh& g) {
  if (g.vao) glDeleteVertexArrays(1, &g.vao);
  if (g.vbo) glDeleteBuffers(1, &g.vbo);
  if (g.ebo) glDeleteBuffers(1, &g.ebo);
  g.vao = g.vbo = g.ebo = 0;
}

Renderer::GpuMesh& Renderer::gpu_mesh(const std::shared_ptr<const Mesh>& mesh) {
  auto it = meshes_.find(mesh.get());
  if (it != meshes_.end() && it->second.owner.lock() != mesh) {
    release(it->second);
    meshes_.erase(it);
    it = meshes_.end();
  }
  if (it == meshes_.end()) {
    const Mesh& m = *mesh;
    size_t nv = m.positions.size();
    // Interleaved position, normal, colour. Missing normals are computed (area-weighted), missing colours are white.
    std::vector<float> data(nv * 9);
    std::vector<glm::vec3> normals;
    if (m.normals.size() != nv) {
      normals.assign(nv, glm::vec3(0.f));
      for (auto& t : m.triangles) {
        if (t[0] >= nv || t[1] >= nv || t[2] >= nv) continue;
        glm::vec3 a = to_glm(m.positions[t[0]]), b = to_glm(m.positions[t[1]]), c = to_glm(m.positions[t[2]]);
        glm::vec3 n = glm::cross(b - a, c - a);
        for (int k = 0; k < 3; ++k) normals[t[k]] += n;
      }
      for (auto& n : normals) {
        float l = glm::length(n);
        n = l > 0 ? n / l : glm::vec3(0, 1, 0);
      }
    }
    bool colors = m.colors.size() == nv;
    for (size_t i = 0; i < nv; ++i) {
      float* d = &data[i * 9];
      std::memcpy(d, m.positions[i].data(), 12);
      if (normals.empty()) std::memcpy(d + 3, m.normals[i].data(), 12);
      else std::memcpy(d + 3, &normals[i][0], 12);
      if (colors) std::memcpy(d + 6, m.colors[i].data(), 12);
      else d[6] = d[7] = d[8] = 1.f;
    }
    // Indices out of range would read outside the buffer: drop those triangles.
    std::vector<uint32_t> idx;
    idx.reserve(m.triangles.size() * 3);
    for (auto& t : m.triangles)
      if (t[0] < nv && t[1] < nv && t[2] < nv) idx.insert(idx.end(), {t[0], t[1], t[2]});
    GpuMesh g;
    g.owner = mesh;
    g.count = static_cast<int>(idx.size());
    glGenVertexArrays(1, &g.vao);
    glGenBuffers(1, &g.vbo);
    glGenBuffers(1, &g.ebo);
    glBindVertexArray(g.vao);
    glBindBuffer(GL_ARRAY_BUFFER, g.vbo);
    glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(data.size() * sizeof(float)), data.data(), GL_STATIC_DRAW);
    glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, g.ebo);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, static_cast<GLsizeiptr>(idx.size() * 4), idx.data(), GL_STATIC_DRAW);
    for (int a = 0; a < 3; ++a) {
      glEnableVertexAttribArray(a);
      glVertexAttribPointer(a, 3, GL_FLOAT, GL_FALSE, 36, reinterpret_cast<void*>(static_cast<uintptr_t>(a * 12)));
    }
    glBindVertexArray(0);
    it = meshes_.emplace(mesh.get(), g).first;
  }
  it->second.last_frame = frame_;
  return it->second;
}

void Renderer::collect_garbage() {
  // Meshes nobody holds, or not drawn for 120 frames (old ghost previews), are freed.
  for (auto it = meshes_.begin(); it != meshes_.end();) {
    if (it->second.owner.expired() || frame_ - it->second.last_frame > 120) {
      release(it->second);
      it = meshes_.erase(it);
    } else {
      ++it;
    }
  }
}

void Renderer::draw_lines(const std::vector<LineVertex>& lines, const glm::mat4& vp, bool depth_test) {
  if (lines.empty()) return;
  glUseProgram(line_prog_);
  glUniformMatrix4fv(line_vp_, 1, GL_FALSE, glm::value_ptr(vp));
  glBindVertexArray(line_vao_);
  glBindBuffer(GL_ARRAY_BUFFER, line_vbo_);
  if (lines.size() > line_capacity_) {
    line_capacity_ = lines.size() * 2;
    glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(line_capacity_ * sizeof(LineVertex)), nullptr, GL_DYNAMIC_DRAW);
  }
  glBufferSubData(GL_ARRAY_BUFFER, 0, static_cast<GLsizeiptr>(lines.size() * sizeof(LineVertex)), lines.data());
  if (depth_test) glEnable(GL_DEPTH_TEST);
  else glDisable(GL_DEPTH_TEST);
  glDrawArrays(GL_LINES, 0, static_cast<GLsizei>(lines.size()));
  ++stats_.draw_calls;
  glBindVertexArray(0);
}

void Renderer::render(const Scene& scene, const Selection& selection, const Camera& camera, const RenderOptions& opt,
                      const std::vector<GhostMesh>& ghosts, const std::vector<LineVertex>& lines) {
  ++frame_;
  stats_ = {};
  if (!fbo_) resize(width_ ? width_ : 640, height_ ? height_ : 480);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glViewport(0, 0, width_, height_);
  glClearColor(opt.background.r, opt.background.g, opt.background.b, 1.f);
  glClearDepth(1.0);
  glClearStencil(0);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT | GL_STENCIL_BUFFER_BIT);
  glEnable(GL_DEPTH_TEST);
  glDepthFunc(GL_LEQUAL);
  glDisable(GL_CULL_FACE);
  glDisable(GL_BLEND);
  glDepthMask(GL_TRUE);
  glm::mat4 vp = camera.view_projection(float(width_), float(height_));

  glUseProgram(mesh_prog_);
  glUniformMatrix4fv(mu_.viewproj, 1, GL_FALSE, glm::value_ptr(vp));
  glm::vec3 ld = glm::normalize(opt.light_dir);
  glUniform3f(mu_.light_dir, ld.x, ld.y, ld.z);
  glUniform1f(mu_.ambient, opt.ambient);
  glUniform2f(mu_.offset, 0.f, 0.f);
  // selected meshes mark their pixels in the stencil buffer (the outline is drawn around them below)
  glEnable(GL_STENCIL_TEST);
  glStencilOp(GL_KEEP, GL_KEEP, GL_REPLACE);
  glStencilFunc(GL_ALWAYS, 1, 0xFF);

  struct Item { const GpuMesh* g; glm::mat4 model; bool selected; };
  std::vector<Item> items;
  items.reserve(scene.size());
  for (const Entity& e : scene.entities()) {
    if (!e.mesh || e.mesh->triangles.empty() || !scene.effectively_visible(e.id)) continue;
    bool sel = selection.contains(e.id);
    for (EntityId s : selection.ids()) sel = sel || scene.is_ancestor(s, e.id);
    glm::mat4 model = scene.world_matrix(e.id);
    const GpuMesh& g = gpu_mesh(e.mesh);
    glUniformMatrix4fv(mu_.model, 1, GL_FALSE, glm::value_ptr(model));
    glm::mat3 nm = glm::transpose(glm::inverse(glm::mat3(model)));
    glUniformMatrix3fv(mu_.normal_mat, 1, GL_FALSE, glm::value_ptr(nm));
    glUniform4f(mu_.tint, e.color[0], e.color[1], e.color[2], 1.f);
    glUniform1i(mu_.mode, 0);
    glStencilMask(sel ? 0xFF : 0x00);
    glBindVertexArray(g.vao);
    glDrawElements(GL_TRIANGLES, g.count, GL_UNSIGNED_INT, nullptr);
    ++stats_.draw_calls;
    stats_.triangles += static_cast<size_t>(g.count / 3);
    items.push_back({&g, model, sel});
  }
  glStencilMask(0x00);

  // Wireframe overlay (option): the meshes as lines, pulled slightly towards the camera.
  if (opt.wireframe) {
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    glPolygonMode(GL_FRONT_AND_BACK, GL_LINE);
    glEnable(GL_POLYGON_OFFSET_LINE);
    glPolygonOffset(-1.f, -1.f);
    glUniform1i(mu_.mode, 1);
    glUniform4f(mu_.flat, kWireColor.r, kWireColor.g, kWireColor.b, kWireColor.a);
    for (auto& it : items) {
      glUniformMatrix4fv(mu_.model, 1, GL_FALSE, glm::value_ptr(it.model));
      glBindVertexArray(it.g->vao);
      glDrawElements(GL_TRIANGLES, it.g->count, GL_UNSIGNED_INT, nullptr);
      ++stats_.draw_calls;
    }
    glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
    glDisable(GL_POLYGON_OFFSET_LINE);
  }

  // Selection outline: each selected mesh drawn flat in the selection colour, shifted 2 px along each axis, only
  // where no selected mesh is (stencil) and in front of everything: a silhouette around the selection that leaves
  // the object's own shading and vertex colours visible (a full wireframe turned dense generated meshes into solid
  // orange blobs).
  bool any_sel = false;
  for (auto& it : items) any_sel |= it.selected;
  if (any_sel) {
    glStencilFunc(GL_NOTEQUAL, 1, 0xFF);
    glDisable(GL_DEPTH_TEST);
    glUniform1i(mu_.mode, 1);
    glUniform4f(mu_.flat, kSelectColor.r, kSelectColor.g, kSelectColor.b, kSelectColor.a);
    const float px = 2.f / float(std::max(width_, 1)), py = 2.f / float(std::max(height_, 1));
    const float d[4][2] = {{2 * px, 0.f}, {-2 * px, 0.f}, {0.f, 2 * py}, {0.f, -2 * py}};
    for (const auto& o : d) {
      glUniform2f(mu_.offset, o[0], o[1]);
      for (auto& it : items) {
        if (!it.selected) continue;
        glUniformMatrix4fv(mu_.model, 1, GL_FALSE, glm::value_ptr(it.model));
        glBindVertexArray(it.g->vao);
        glDrawElements(GL_TRIANGLES, it.g->count, GL_UNSIGNED_INT, nullptr);
        ++stats_.draw_calls;
      }
    }
    glUniform2f(mu_.offset, 0.f, 0.f);
    glEnable(GL_DEPTH_TEST);
  }
  glDisable(GL_STENCIL_TEST);

  // Grid and axes (blended, depth-tested, no depth writes).
  glEnable(GL_BLEND);
  glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
  glDepthMask(GL_FALSE);
  std::vector<LineVertex> scene_lines;
  if (opt.grid) scene_lines = grid_;
  if (opt.axes) {
    const float L = 50.f;
    scene_lines.push_back({{-L, 0, 0}, {0.9f, 0.25f, 0.25f, 0.9f}});
    scene_lines.push_back({{L, 0, 0}, {0.9f, 0.25f, 0.25f, 0.9f}});
    scene_lines.push_back({{0, 0, -L}, {0.25f, 0.45f, 0.95f, 0.9f}});
    scene_lines.push_back({{0, 0, L}, {0.25f, 0.45f, 0.95f, 0.9f}});
    scene_lines.push_back({{0, 0, 0}, {0.3f, 0.9f, 0.3f, 0.9f}});
    scene_lines.push_back({{0, 2, 0}, {0.3f, 0.9f, 0.3f, 0.9f}});
  }
  draw_lines(scene_lines, vp, true);

  // Ghost meshes: translucent, depth-tested against the scene, not writing depth.
  if (!ghosts.empty()) {
    glUseProgram(mesh_prog_);
    glUniform1i(mu_.mode, 0);
    for (const GhostMesh& gh : ghosts) {
      if (!gh.mesh || gh.mesh->triangles.empty()) continue;
      const GpuMesh& g = gpu_mesh(gh.mesh);
      glUniformMatrix4fv(mu_.model, 1, GL_FALSE, glm::value_ptr(gh.model));
      glm::mat3 nm = glm::transpose(glm::inverse(glm::mat3(gh.model)));
      glUniformMatrix3fv(mu_.normal_mat, 1, GL_FALSE, glm::value_ptr(nm));
      glUniform4f(mu_.tint, gh.rgba.r, gh.rgba.g, gh.rgba.b, gh.rgba.a);
      glBindVertexArray(g.vao);
      glDrawElements(GL_TRIANGLES, g.count, GL_UNSIGNED_INT, nullptr);
      ++stats_.draw_calls;
      stats_.triangles += static_cast<size_t>(g.count / 3);
    }
  }
  draw_lines(lines, vp, true);
  glDepthMask(GL_TRUE);
  glDisable(GL_BLEND);
  glBindVertexArray(0);
  glUseProgram(0);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (frame_ % 60 == 0) collect_garbage();
  stats_.gpu_meshes = meshes_.size();
}

namespace {

// GL rows are bottom-up: flip to top-down, and make the image opaque.
void flip_rows_opaque(std::vector<uint8_t>& px, int w, int h) {
  const size_t row = static_cast<size_t>(w) * 4;
  std::vector<uint8_t> tmp(row);
  for (int y = 0; y < h / 2; ++y) {
    uint8_t* a = px.data() + y * row;
    uint8_t* b = px.data() + (h - 1 - y) * row;
    std::memcpy(tmp.data(), a, row);
    std::memcpy(a, b, row);
    std::memcpy(b, tmp.data(), row);
  }
  for (size_t i = 3; i < px.size(); i += 4) px[i] = 255;
}

}  // namespace

std::vector<uint8_t> Renderer::read_pixels() const {
  std::vector<uint8_t> px(static_cast<size_t>(width_) * height_ * 4);
  if (!fbo_) return px;
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  flip_rows_opaque(px, width_, height_);
  return px;
}

void Renderer::save_png(const std::string& path) const { write_png(path, width_, height_, read_pixels()); }

std::vector<uint8_t> read_window_pixels(int w, int h) {
  if (w <= 0 || h <= 0) throw Error("window screenshot: the window has no area");
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * 4);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  flip_rows_opaque(px, w, h);
  return px;
}

void write_png(const std::string& path, int w, int h, const std::vector<uint8_t>& rgba) {
  std::string bytes;
  auto append = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (w <= 0 || h <= 0 || rgba.size() != static_cast<size_t>(w) * h * 4 ||
      !stbi_write_png_to_func(append, &bytes, w, h, 4, rgba.data(), w * 4))
    throw Error("screenshot " + path + ": cannot encode a " + std::to_string(w) + "x" + std::to_string(h) + " PNG");
  try {
    fileio::atomic_write_file(path, bytes);
  } catch (const Error& e) {
    throw Error("screenshot " + path + ": cannot write PNG (" + e.what() + ")");
  }
}

}  // namespace cubeforge::editor
