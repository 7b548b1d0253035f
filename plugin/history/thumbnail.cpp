// Software thumbnail rasteriser and PNG I/O: see thumbnail.h.
#include "history/thumbnail.h"

#include "placement/placement.h"

#include "fileio/atomic_file.h"

#include <cubeforge/error.h>

#include <stb_image.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cubeforge::ai {

RgbaImage render_thumbnail(const Mesh& mesh, int size) {
  const int ss = 2, W = size * ss;
  std::vector<float> col(std::size_t(W) * W * 3, 0.f), depth(std::size_t(W) * W, std::numeric_limits<float>::infinity());
  const float bg[3] = {0.035f, 0.04f, 0.05f};  // linear (about sRGB 52, 56, 63)
  for (std::size_t i = 0; i < std::size_t(W) * W; ++i)
    for (int c = 0; c < 3; ++c) col[i * 3 + c] = bg[c];

  const Bounds b = mesh_bounds(mesh);
  if (b.valid && !mesh.triangles.empty()) {
    // View: yaw 35° around Y, then pitch 25° down. Rows of the rotation are the camera axes.
    const float yaw = 35.f * 3.14159265f / 180.f, pitch = 25.f * 3.14159265f / 180.f;
    const float cy = std::cos(yaw), sy = std::sin(yaw), cp = std::cos(pitch), sp = std::sin(pitch);
    const float right[3] = {cy, 0.f, -sy};
    const float up[3] = {sy * sp, cp, cy * sp};
    const float fwd[3] = {sy * cp, -sp, cy * cp};  // from the camera into the scene
    const float c[3] = {0.5f * (b.min[0] + b.max[0]), 0.5f * (b.min[1] + b.max[1]), 0.5f * (b.min[2] + b.max[2])};
    float radius = 0.f;
    for (const auto& p : mesh.positions) {
      const float d[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
      radius = std::max(radius, std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
    }
    if (radius <= 0.f) radius = 1.f;
    const float scale = 0.46f * float(W) / radius;
    std::vector<std::array<float, 3>> v(mesh.positions.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const auto& p = mesh.positions[i];
      const float d[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
      const float x = d[0] * right[0] + d[1] * right[1] + d[2] * right[2];
      const float y = d[0] * up[0] + d[1] * up[1] + d[2] * up[2];
      const float z = d[0] * fwd[0] + d[1] * fwd[1] + d[2] * fwd[2];
      v[i] = {0.5f * float(W) + x * scale, 0.5f * float(W) - y * scale, z};
    }
    // Light from the upper left, towards the scene (in view space).
    float L[3] = {-0.45f, 0.65f, -0.6f};
    const float ln = std::sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2]);
    for (float& x : L) x /= ln;
    const bool painted = mesh.colors.size() == mesh.positions.size();  // vertex colours: each face their mean
    for (const auto& t : mesh.triangles) {
      if (t[0] >= v.size() || t[1] >= v.size() || t[2] >= v.size()) continue;
      float base[3] = {0.80f, 0.82f, 0.88f};
      if (painted)
        for (int k = 0; k < 3; ++k) base[k] = (mesh.colors[t[0]][k] + mesh.colors[t[1]][k] + mesh.colors[t[2]][k]) / 3.f;
      const auto &a = v[t[0]], &bb = v[t[1]], &cc = v[t[2]];
      // Face normal in view space (screen y points down: flip it back).
      const float e1[3] = {bb[0] - a[0], -(bb[1] - a[1]), bb[2] - a[2]};
      const float e2[3] = {cc[0] - a[0], -(cc[1] - a[1]), cc[2] - a[2]};
      float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
      const float nn = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
      if (nn <= 0.f) continue;
      for (float& x : n) x /= nn;
      const float lambert = std::fabs(n[0] * L[0] + n[1] * L[1] + n[2] * L[2]);
      const float shade = 0.22f + 0.78f * lambert;
      const float area = (bb[0] - a[0]) * (cc[1] - a[1]) - (bb[1] - a[1]) * (cc[0] - a[0]);
      if (std::fabs(area) < 1e-12f) continue;
      const int x0 = std::max(0, int(std::floor(std::min({a[0], bb[0], cc[0]}))));
      const int x1 = std::min(W - 1, int(std::ceil(std::max({a[0], bb[0], cc[0]}))));
      const int y0 = std::max(0, int(std::floor(std::min({a[1], bb[1], cc[1]}))));
      const int y1 = std::min(W - 1, int(std::ceil(std::max({a[1], bb[1], cc[1]}))));
      for (int y = y0; y <= y1; ++y) {
        const float py = float(y) + 0.5f;
        for (int x = x0; x <= x1; ++x) {
          const float px = float(x) + 0.5f;
          float w0 = (bb[0] - px) * (cc[1] - py) - (bb[1] - py) * (cc[0] - px);
          float w1 = (cc[0] - px) * (a[1] - py) - (cc[1] - py) * (a[0] - px);
          float w2 = (a[0] - px) * (bb[1] - py) - (a[1] - py) * (bb[0] - px);
          if (area < 0) {
            w0 = -w0;
            w1 = -w1;
            w2 = -w2;
          }
          if (w0 < 0 || w1 < 0 || w2 < 0) continue;
          const float inv = 1.f / std::fabs(area);
          const float z = (w0 * a[2] + w1 * bb[2] + w2 * cc[2]) * inv;
          const std::size_t idx = std::size_t(y) * W + x;
          if (z >= depth[idx]) continue;
          depth[idx] = z;
          for (int k = 0; k < 3; ++k) col[idx * 3 + k] = base[k] * shade;
        }
      }
    }
  }
  RgbaImage img;
  img.width = img.height = size;
  img.rgba.resize(std::size_t(size) * size * 4);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      float acc[3] = {0, 0, 0};
      for (int dy = 0; dy < ss; ++dy)
        for (int dx = 0; dx < ss; ++dx) {
          const std::size_t idx = std::size_t(y * ss + dy) * W + (x * ss + dx);
          for (int k = 0; k < 3; ++k) acc[k] += col[idx * 3 + k];
        }
      std::uint8_t* o = &img.rgba[(std::size_t(y) * size + x) * 4];
      for (int k = 0; k < 3; ++k) {
        const float lin = acc[k] / float(ss * ss);
        o[k] = std::uint8_t(std::clamp(std::pow(lin, 1.f / 2.2f) * 255.f + 0.5f, 0.f, 255.f));
      }
      o[3] = 255;
    }
  return img;
}

void write_png(const RgbaImage& img, const std::string& path) {
  if (img.width <= 0 || img.height <= 0 || img.rgba.size() != std::size_t(img.width) * img.height * 4)
    throw Error("thumbnail image is empty or malformed");
  std::string data;
  auto sink = [](void* ctx, void* bytes, int n) { static_cast<std::string*>(ctx)->append(static_cast<char*>(bytes), n); };
  if (!stbi_write_png_to_func(sink, &data, img.width, img.height, 4, img.rgba.data(), img.width * 4))
    throw Error("cannot encode PNG '" + path + "'");
  // On the worker thread (save_result): written now, without fsync, so the job's end does not wait on the disk.
  fileio::create_parent_folders(path);
  fileio::atomic_write_file(path, data, {}, /*durable=*/false);
}

RgbaImage read_png(const std::string& path) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &n, 4);
  if (!px) throw Error("cannot read image '" + path + "'");
  RgbaImage img;
  img.width = w;
  img.height = h;
  img.rgba.assign(px, px + std::size_t(w) * h * 4);
  stbi_image_free(px);
  return img;
}

}  // namespace cubeforge::ai
