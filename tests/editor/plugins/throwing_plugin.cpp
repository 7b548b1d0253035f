// Broken test plugin: registers a panel and then throws from on_load; the host must drop the panel and skip it.
#include <cubeforge/editor/plugin_api.h>

#include <stdexcept>

using namespace cubeforge::editor;

namespace {
class Thrower : public Plugin {
 public:
  void on_load(Host& host) override {
    host.add_panel("Never shown", [] {});
    throw std::runtime_error("cannot find model weights");
  }
};
}  // namespace

CUBEFORGE_PLUGIN(Thrower, "thrower")
