// Test plugin (shared library): registers a panel, a menu item, an overlay, an input handler and script commands
// that exercise named undo steps, rollback, worker-thread posting and settings.
#include <cubeforge/editor/plugin_api.h>

#include <thread>

using namespace cubeforge::editor;

namespace {

std::shared_ptr<const cubeforge::Mesh> triangle() {
  auto m = std::make_shared<cubeforge::Mesh>();
  m->positions = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  m->triangles = {{0, 1, 2}};
  return m;
}

class GoodPlugin : public Plugin {
 public:
  void on_load(Host& host) override {
    host_ = &host;
    host.add_panel("Good Panel", [] {});
    host.add_menu_item("Plugins/Good/Say hello", [&host] { host.log(LogLevel::Info, "hello"); });
    host.add_viewport_overlay([](OverlayDraw& d) { d.line({0, 0, 0}, {1, 1, 1}, {1, 0, 0, 1}); });
    host.add_viewport_input([](const ViewportEvent& ev) {
      return ev.type == ViewportEvent::Type::Press && ev.ctrl ? ViewportReply::Consumed : ViewportReply::Ignored;
    });
    host.add_command("good.generate", [&host](const std::string& args) {
      EntityId group = kNoEntity;
      host.apply("Generate: " + args, [&](ChangeSet& cs) {
        group = cs.add_group(args);
        for (int i = 0; i < 3; ++i) {
          Transform t;
          t.position = {float(i), 0, 0};
          cs.add_mesh("piece", triangle(), t, {1, 0, 0}, group);
        }
        cs.select({group});
      });
      return std::to_string(group);
    });
    host.add_command("good.fail_midway", [&host](const std::string&) {
      bool ok = host.apply("Doomed", [&](ChangeSet& cs) {
        cs.add_mesh("a", triangle(), {});
        throw std::runtime_error("model exploded");
      });
      return std::string(ok ? "true" : "false");
    });
    host.add_command("good.worker", [&host](const std::string&) {
      std::thread([&host] {
        host.post([&host] { host.apply("From worker", [](ChangeSet& cs) { cs.add_mesh("w", triangle(), {}); }); });
      }).detach();
      return std::string("posted");
    });
    host.add_command("good.count", [&host](const std::string&) { return std::to_string(host.entities().size()); });
    host.add_command("good.set", [&host](const std::string& v) {
      host.set_setting("value", v);
      return host.setting("value");
    });
    host.add_command("good.get", [&host](const std::string&) { return host.setting("value", "\"none\""); });
    host.add_command("good.throw", [](const std::string&) -> std::string { throw std::runtime_error("bad args"); });
  }

 private:
  Host* host_ = nullptr;
};

}  // namespace

CUBEFORGE_PLUGIN(GoodPlugin, "good")
