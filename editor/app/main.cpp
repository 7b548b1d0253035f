// `cubeforge`: the editor binary. Window mode (GLFW + ImGui), `--script FILE` scripted mode for tests and testers,
// and `--headless` (EGL surfaceless, no X, no ImGui) for scripted renders. Loads plugins from the plugins directory,
// autosaves to a recovery file and offers it on the next start after a crash.
#include "core/autosaver.h"
#include "core/settings.h"
#include "render/egl_context.h"
#include "script.h"
#include "ui/editor_ui.h"

#include <glad/gl.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

using namespace cubeforge::editor;
namespace fs = std::filesystem;

namespace {

struct Args {
  std::string scene, script, plugins;
  bool no_plugins = false, headless = false;
  int width = 1600, height = 900;
};

// A scripted screenshot of the whole window: asked for by the script's action (poll), taken by the main loop right
// before the next buffer swap (take: the back buffer then holds the finished frame, panels included; the front
// buffer is not kept by every GL), then reported to the action at its next poll.
class WindowShot {
 public:
  bool poll(const std::string& path) {
    if (state_ == State::Idle) {
      path_ = path;
      state_ = State::Wanted;
    }
    if (state_ == State::Wanted) return false;
    state_ = State::Idle;
    if (!error_.empty()) throw cubeforge::Error(std::exchange(error_, {}));
    return true;
  }
  void take(int w, int h) {
    if (state_ != State::Wanted) return;
    try {
      write_png(path_, w, h, read_window_pixels(w, h));
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    state_ = State::Taken;
  }

 private:
  enum class State { Idle, Wanted, Taken } state_ = State::Idle;
  std::string path_, error_;
};

void usage() {
  std::puts(
      "usage: cubeforge [scene.cfscene] [--script FILE] [--headless] [--plugins DIR | --no-plugins] [--size WxH]\n"
      "  --script FILE   run a JSON list of actions (see README, \"Script mode\"); exit code 0 = all passed\n"
      "  --headless      no window: EGL surfaceless rendering, for scripts without X (no gizmo_drag)\n"
      "  --plugins DIR   plugin directory (default: <binary dir>/plugins, or $CUBEFORGE_PLUGIN_DIR)\n"
      "  --size WxH      window / headless viewport size");
}

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(s + " needs a value");
      return argv[++i];
    };
    if (s == "--script") a.script = next();
    else if (s == "--plugins") a.plugins = next();
    else if (s == "--no-plugins") a.no_plugins = true;
    else if (s == "--headless") a.headless = true;
    else if (s == "--size") {
      std::string v = next();
      if (std::sscanf(v.c_str(), "%dx%d", &a.width, &a.height) != 2 || a.width < 64 || a.height < 64)
        throw std::runtime_error("--size wants WxH, e.g. 1280x800");
    } else if (s == "--help" || s == "-h") {
      usage();
      return false;
    } else if (!s.empty() && s[0] == '-') throw std::runtime_error("unknown option " + s);
    else a.scene = s;
  }
  return true;
}

void load_plugins(PluginHost& host, const Args& a) {
  if (a.no_plugins) return;
  std::string dir = a.plugins;
  if (dir.empty())
    if (const char* e = std::getenv("CUBEFORGE_PLUGIN_DIR"); e && *e) dir = e;
  if (dir.empty()) dir = default_plugin_dir();
  host.load_directory(dir);
}

int run_headless(const Args& a, Document& doc, PluginHost& host, ScriptRunner* runner) {
  HeadlessGL gl;
  std::string err;
  if (!gl.create(&err)) {
    std::fprintf(stderr, "cubeforge: %s\n", err.c_str());
    return 1;
  }
  Renderer renderer;
  if (!renderer.init(&err)) {
    std::fprintf(stderr, "cubeforge: %s\n", err.c_str());
    return 1;
  }
  renderer.resize(a.width, a.height);
  Camera camera;
  camera.frame(doc.scene().scene_bounds());
  RenderOptions opt;
  Selection none;
  ScriptEnv env{doc, host, camera,
                [&](const std::string& path, int w, int h, bool window) {
                  if (window) throw cubeforge::Error("\"window\": true needs the editor window (not --headless)");
                  if (w > 0 && h > 0) renderer.resize(w, h);
                  renderer.render(doc.scene(), doc.selection(), camera, opt);
                  renderer.save_png(path);
                  doc.log().info("screenshot " + path + " (" + gl.renderer_name() + ")");
                  return true;
                },
                nullptr};
  host.set_viewport_ray([&](float x, float y) -> std::optional<Ray> {
    return camera.pixel_ray(x, y, float(renderer.width()), float(renderer.height()));
  });
  load_plugins(host, a);
  if (!runner) {
    std::fprintf(stderr, "cubeforge: --headless needs --script FILE\n");
    return 2;
  }
  for (;;) {
    host.frame();
    auto st = runner->step(env);
    if (st == ScriptRunner::State::Failed) {
      std::fprintf(stderr, "cubeforge: %s\n", runner->error().c_str());
      return 1;
    }
    if (st == ScriptRunner::State::Done) break;
  }
  host.unload_all();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    if (!parse(argc, argv, args)) return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "cubeforge: %s\n", ex.what());
    usage();
    return 2;
  }
  Log log(true);
  Document doc(log);
  TaskQueue tasks;
  PluginHost host(doc, tasks);

  std::unique_ptr<ScriptRunner> runner;
  if (!args.script.empty()) {
    runner = std::make_unique<ScriptRunner>();
    try {
      runner->load(args.script);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "cubeforge: %s\n", ex.what());
      return 2;
    }
  }
  if (!args.scene.empty()) {
    try {
      doc.open(args.scene);
    } catch (const std::exception& ex) {
      log.error(ex.what());
      if (runner) {
        std::fprintf(stderr, "cubeforge: %s\n", ex.what());
        return 1;
      }
    }
  }
  if (args.headless) return run_headless(args, doc, host, runner.get());

  glfwSetErrorCallback([](int code, const char* msg) { std::fprintf(stderr, "cubeforge: GLFW error %d: %s\n", code, msg); });
  if (!glfwInit()) {
    std::fprintf(stderr, "cubeforge: cannot open a window (no X display?). For scripts without X use --headless.\n");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  if (runner && args.width == 1600) {
    args.width = 1280;
    args.height = 800;
  }
  GLFWwindow* window = glfwCreateWindow(args.width, args.height, "Cubeforge", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "cubeforge: cannot create an OpenGL 3.3 core window\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(runner ? 0 : 1);
  if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(glfwGetProcAddress))) {
    std::fprintf(stderr, "cubeforge: cannot load OpenGL functions\n");
    return 1;
  }
  tasks.set_owner_thread();

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  static std::string ini = (fs::path(config_dir()) / "imgui.ini").string();  // never in the working directory
  io.IniFilename = runner ? nullptr : ini.c_str();
  ImGui::StyleColorsDark();
  ImGui::GetStyle().WindowRounding = 0.f;
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  Renderer renderer;
  std::string err;
  if (!renderer.init(&err)) {
    std::fprintf(stderr, "cubeforge: %s\n", err.c_str());
    return 1;
  }
  EditorUI ui(doc, host, renderer);
  SettingsStore ui_settings((fs::path(config_dir()) / "editor.json").string());  // the editor's own layout
  ui.use_settings(&ui_settings);
  const char* gl_renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  const char* gl_version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
  ui.set_backend_name(std::string("OpenGL ") + (gl_version ? gl_version : "?") + " / " + (gl_renderer ? gl_renderer : "?"));
  log.info(std::string("renderer: ") + (gl_renderer ? gl_renderer : "?") + ", " + (gl_version ? gl_version : "?"));
  host.set_imgui_context(ImGui::GetCurrentContext());
  host.set_redraw([] { glfwPostEmptyEvent(); });
  load_plugins(host, args);
  if (!runner && Document::has_recovery()) ui.offer_recovery();
  ui.camera().frame(doc.scene().scene_bounds());

  glfwSetWindowUserPointer(window, &ui);
  glfwSetDropCallback(window, [](GLFWwindow* w, int n, const char** paths) {
    std::vector<std::string> v(paths, paths + n);
    static_cast<EditorUI*>(glfwGetWindowUserPointer(w))->on_drop(v);
  });

  WindowShot window_shot;
  ScriptEnv env{doc, host, ui.camera(),
                [&](const std::string& path, int, int, bool whole) {
                  if (!whole) {
                    ui.screenshot(path);
                    log.info("screenshot " + path);
                    return true;
                  }
                  if (!window_shot.poll(path)) return false;
                  log.info("screenshot (window) " + path);
                  return true;
                },
                &ui};
  int exit_code = 0;
  auto last = std::chrono::steady_clock::now();
  auto last_autosave = last;
  uint64_t autosaved_counter = doc.history().change_counter();
  Autosaver autosaver;
  for (;;) {
    if (runner) glfwPollEvents();
    else glfwWaitEventsTimeout(tasks.pending() ? 0.0 : 0.1);
    if (glfwWindowShouldClose(window)) {
      glfwSetWindowShouldClose(window, GLFW_FALSE);
      if (runner) break;
      ui.request_quit();
    }
    auto now = std::chrono::steady_clock::now();
    float dt = std::chrono::duration<float>(now - last).count();
    last = now;

    host.frame();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ui.apply_script_mouse();
    ImGui::NewFrame();
    if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_Q, false)) ui.request_quit();
    ui.frame(dt);
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.1f, 0.1f, 0.11f, 1.f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    window_shot.take(fw, fh);  // before the swap: the back buffer holds this frame (the front one may not)
    glfwSwapBuffers(window);
    glfwSetWindowTitle(window, ("Cubeforge - " + doc.title()).c_str());

    if (runner) {
      auto st = runner->step(env);
      if (st == ScriptRunner::State::Failed) {
        std::fprintf(stderr, "cubeforge: %s\n", runner->error().c_str());
        exit_code = 1;
        break;
      }
      if (st == ScriptRunner::State::Done) break;
    } else {
      // autosave on the Autosaver's thread (a copy of the scene), at most every 60 s while there are changes
      if (auto fin = autosaver.take_finished()) {
        if (fin->error.empty()) autosaved_counter = fin->counter;
        else log.warn("autosave failed: " + fin->error);
      }
      if (doc.dirty() && doc.history().change_counter() != autosaved_counter &&
          now - last_autosave > std::chrono::seconds(60) && autosaver.start(doc.scene(), doc.path(),
                                                                            doc.history().change_counter()))
        last_autosave = now;
    }
    if (ui.should_quit()) break;
  }
  host.unload_all();
  autosaver.wait();  // a write still running would recreate the files discarded next
  if (!runner) Document::discard_recovery();  // clean exit: nothing to recover
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}
