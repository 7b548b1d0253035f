// Headless OpenGL 3.3 core context through EGL surfaceless (Mesa), no X needed. Used by renderer tests, the
// benchmark and `cubeforge --headless`. Rendering goes into the Renderer's FBO.
#pragma once
#include <string>

namespace cubeforge::editor {

class HeadlessGL {
 public:
  HeadlessGL() = default;
  ~HeadlessGL();
  HeadlessGL(const HeadlessGL&) = delete;
  HeadlessGL& operator=(const HeadlessGL&) = delete;
  // Creates the context, makes it current and loads GL with glad. Returns false with a message on failure.
  bool create(std::string* error);
  std::string renderer_name() const;

 private:
  void* display_ = nullptr;
  void* context_ = nullptr;
};

}  // namespace cubeforge::editor
