// Thumbnail textures through GL 1.1 entry points: see textures.h.
#include "ui/textures.h"

#include <GL/gl.h>

namespace cubeforge::ai {

bool ThumbnailTextures::gl_available() { return glGetString(GL_VERSION) != nullptr; }

unsigned ThumbnailTextures::get(const std::string& key, const std::shared_ptr<const RgbaImage>& img) {
  auto it = tex_.find(key);
  if (it != tex_.end()) return it->second;
  if (!img || img->width <= 0 || img->rgba.size() != std::size_t(img->width) * img->height * 4) return 0;
  if (!gl_available()) return 0;
  GLint prev = 0, prev_align = 4;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &prev);
  glGetIntegerv(GL_UNPACK_ALIGNMENT, &prev_align);
  GLuint t = 0;
  glGenTextures(1, &t);
  glBindTexture(GL_TEXTURE_2D, t);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, 0x812F /* GL_CLAMP_TO_EDGE */);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, 0x812F);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexImage2D(GL_TEXTURE_2D, 0, 0x8058 /* GL_RGBA8 */, img->width, img->height, 0, GL_RGBA, GL_UNSIGNED_BYTE,
               img->rgba.data());
  glPixelStorei(GL_UNPACK_ALIGNMENT, prev_align);
  glBindTexture(GL_TEXTURE_2D, GLuint(prev));
  tex_[key] = t;
  return t;
}

void ThumbnailTextures::drop(const std::string& key) {
  auto it = tex_.find(key);
  if (it == tex_.end()) return;
  if (it->second && gl_available()) glDeleteTextures(1, &it->second);
  tex_.erase(it);
}

void ThumbnailTextures::clear() {
  if (!tex_.empty() && gl_available())
    for (auto& [k, t] : tex_)
      if (t) glDeleteTextures(1, &t);
  tex_.clear();
}

}  // namespace cubeforge::ai
