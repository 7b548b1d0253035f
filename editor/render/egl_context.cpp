// EGL surfaceless context creation.
#include "egl_context.h"

#include <glad/gl.h>
// glad first; then EGL.
#include <EGL/egl.h>
#include <EGL/eglext.h>

namespace cubeforge::editor {

HeadlessGL::~HeadlessGL() {
  if (display_) {
    eglMakeCurrent(static_cast<EGLDisplay>(display_), EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (context_) eglDestroyContext(static_cast<EGLDisplay>(display_), static_cast<EGLContext>(context_));
    eglTerminate(static_cast<EGLDisplay>(display_));
  }
}

bool HeadlessGL::create(std::string* error) {
  auto fail = [&](const std::string& m) {
    if (error) *error = "headless GL: " + m;
    return false;
  };
  auto get_platform_display =
      reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (!get_platform_display) return fail("eglGetPlatformDisplayEXT not available");
  EGLDisplay dpy = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  if (dpy == EGL_NO_DISPLAY) return fail("no surfaceless EGL display (Mesa EGL_MESA_platform_surfaceless missing)");
  EGLint major = 0, minor = 0;
  if (!eglInitialize(dpy, &major, &minor)) return fail("eglInitialize failed");
  display_ = dpy;
  if (!eglBindAPI(EGL_OPENGL_API)) return fail("eglBindAPI(EGL_OPENGL_API) failed");
  const EGLint cfg_attr[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
  EGLConfig cfg = nullptr;
  EGLint n = 0;
  eglChooseConfig(dpy, cfg_attr, &cfg, 1, &n);  // surfaceless may legitimately report 0 configs
  const EGLint ctx_attr[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3, EGL_CONTEXT_OPENGL_PROFILE_MASK,
                             EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
  EGLContext ctx = eglCreateContext(dpy, n > 0 ? cfg : EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, ctx_attr);
  if (ctx == EGL_NO_CONTEXT) return fail("eglCreateContext(3.3 core) failed");
  context_ = ctx;
  if (!eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx)) return fail("eglMakeCurrent failed");
  if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(eglGetProcAddress))) return fail("gladLoadGL failed");
  return true;
}

std::string HeadlessGL::renderer_name() const {
  const GLubyte* r = glGetString(GL_RENDERER);
  return r ? reinterpret_cast<const char*>(r) : "?";
}

}  // namespace cubeforge::editor
