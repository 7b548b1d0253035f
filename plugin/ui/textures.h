// GL textures for the history thumbnails. The plugin API has no texture service, so the plugin uploads its
// software-rendered thumbnails itself with GL 1.1 entry points (glGenTextures/glTexImage2D via glvnd's libOpenGL),
// only on the GL (main) thread and only while a context is current. ImTextureID is the GL name, as the editor's
// ImGui OpenGL3 backend expects.
#pragma once
#include "worker/job.h"

#include <map>
#include <memory>
#include <string>

namespace cubeforge::ai {

class ThumbnailTextures {
 public:
  ~ThumbnailTextures() { clear(); }
  // The texture of key (uploaded on first use); 0 when there is no image or no GL context.
  unsigned get(const std::string& key, const std::shared_ptr<const RgbaImage>& img);
  void drop(const std::string& key);
  void clear();  // GL thread, context current
  std::size_t size() const { return tex_.size(); }
  static bool gl_available();

 private:
  std::map<std::string, unsigned> tex_;
};

}  // namespace cubeforge::ai
