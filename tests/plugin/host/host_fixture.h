// A headless editor (Document + TaskQueue + PluginHost, no window, no GL) with the AI plugin linked in statically,
// so tests drive the real plugin through its script commands, viewport hooks and frame loop.
#pragma once
#include "ai_plugin.h"

#include "plugin_host/plugin_host.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>
#include <unistd.h>

namespace cubeforge::ai::testing {

namespace fs = std::filesystem;
using nlohmann::json;

// The options the next statically loaded plugin is created with (PluginEntry::create takes no arguments).
inline ControllerOptions& next_plugin_options() {
  static ControllerOptions o;
  return o;
}
inline AiPlugin*& last_plugin() {
  static AiPlugin* p = nullptr;
  return p;
}
inline editor::PluginEntry test_entry() {
  editor::PluginEntry e;
  e.api_version = CUBEFORGE_EDITOR_API_VERSION;
  e.name = "ai";
  e.create = []() -> editor::Plugin* {
    auto* p = new AiPlugin(next_plugin_options());
    last_plugin() = p;
    return p;
  };
  e.destroy = [](editor::Plugin* p) { delete p; };
  return e;
}

struct ScopedConfigDir {
  fs::path dir;
  explicit ScopedConfigDir(const std::string& tag) {
    dir = fs::temp_directory_path() / ("cf_ai_host_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    ::setenv("CUBEFORGE_CONFIG_DIR", dir.c_str(), 1);
    ::setenv("HOME", dir.c_str(), 1);
  }
  ~ScopedConfigDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

class Editor {
 public:
  editor::Log log{false};
  editor::Document doc{log};
  editor::TaskQueue tasks;
  editor::PluginHost host{doc, tasks};
  AiPlugin* plugin = nullptr;

  explicit Editor(ControllerOptions opt, void* imgui_ctx = nullptr) {
    if (imgui_ctx) host.set_imgui_context(imgui_ctx);
    next_plugin_options() = std::move(opt);
    auto st = host.load_static(test_entry());
    EXPECT_TRUE(st.loaded) << st.error;
    plugin = last_plugin();
  }
  ~Editor() { host.unload_all(); }

  json cmd(const std::string& name, const json& args = json::object()) {
    return json::parse(host.run_command(name, args.dump()));
  }
  json status() { return cmd("ai.status"); }
  void frame() { host.frame(); }
  // Runs frames (2 ms apart) until cond holds; false on timeout.
  bool pump_until(const std::function<bool()>& cond, double timeout_s = 30) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
    while (std::chrono::steady_clock::now() < end) {
      frame();
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    frame();
    return cond();
  }
  bool wait_idle(double timeout_s = 30) {
    return pump_until([&] { return !status()["busy"].get<bool>(); }, timeout_s);
  }
  bool wait_model(double timeout_s = 30) {
    return pump_until([&] {
      auto s = status()["model"]["state"].get<std::string>();
      return s == "ready" || s == "failed";
    }, timeout_s);
  }
  std::string errors() {
    std::string out;
    const json st = status();  // (a range-for over status()["messages"] would dangle)
    for (auto& m : st["messages"])
      if (m["level"] == "error") out += m["text"].get<std::string>() + "\n";
    return out;
  }
  std::string all_messages() {
    std::string out;
    const json st = status();
    for (auto& m : st["messages"]) out += m["level"].get<std::string>() + ": " + m["text"].get<std::string>() + "\n";
    return out;
  }
};

}  // namespace cubeforge::ai::testing
