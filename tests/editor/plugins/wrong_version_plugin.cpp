// Broken test plugin: exports an entry built for a different plugin API version.
#include <cubeforge/editor/plugin_api.h>

using namespace cubeforge::editor;

namespace {
class Old : public Plugin {
 public:
  void on_load(Host&) override {}
};
}  // namespace

extern "C" __attribute__((visibility("default"))) const PluginEntry* cubeforge_plugin_entry() {
  static PluginEntry e = make_plugin_entry<Old>("old");
  e.api_version = CUBEFORGE_EDITOR_API_VERSION + 41;
  return &e;
}
