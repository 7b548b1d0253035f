// The AI sidebar as an editor plugin: wires the Controller (logic), the Panel (ImGui) and the editor's plugin API
// (panel, menu items, viewport overlay + click-to-place input, script commands). The shared library's entry point
// is in entry.cpp; tests create AiPlugin directly with their own backend and load it statically.
#pragma once
#include "controller/controller.h"
#include "ui/panel.h"

#include <cubeforge/editor/plugin_api.h>

#include <memory>

namespace cubeforge::ai {

class AiPlugin : public editor::Plugin {
 public:
  AiPlugin() = default;
  explicit AiPlugin(ControllerOptions options) : options_(std::move(options)) {}
  ~AiPlugin() override;
  void on_load(editor::Host& host) override;
  void on_frame(editor::Host& host) override;
  void on_unload(editor::Host& host) override;

  Controller* controller() { return controller_.get(); }
  Panel* panel() { return panel_.get(); }

 private:
  ControllerOptions options_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<Panel> panel_;
};

}  // namespace cubeforge::ai
