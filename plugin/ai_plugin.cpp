// AI sidebar plugin wiring: see ai_plugin.h.
#include "ai_plugin.h"

#include <imgui.h>

namespace cubeforge::ai {

AiPlugin::~AiPlugin() = default;

void AiPlugin::on_load(editor::Host& host) {
  // This library may carry its own copy of ImGui: bind it to the editor's context (null in --headless mode).
  if (host.imgui_context()) ImGui::SetCurrentContext(static_cast<ImGuiContext*>(host.imgui_context()));
  controller_ = std::make_unique<Controller>(host, options_);
  panel_ = std::make_unique<Panel>(*controller_);
  Controller* c = controller_.get();
  Panel* p = panel_.get();
  host.add_panel("AI", [p] { p->draw(); });
  host.add_menu_item("Plugins/AI/Generate", [c] { c->generate(); }, "Ctrl+Enter", [c] { return !c->busy(); });
  host.add_menu_item("Plugins/AI/Cancel", [c] { c->cancel(); }, "Esc", [c] { return c->busy(); });
  host.add_menu_item("Plugins/AI/Pick landing spot", [c] { c->arm_pick(); });
  host.add_menu_item("Plugins/AI/Export latency report (CSV + JSON)",
                     [c] { c->export_latency(c->default_report_path(".csv"), c->default_report_path(".json")); });
  host.add_viewport_overlay([c](editor::OverlayDraw& d) { c->draw_overlay(d); });
  host.add_viewport_input([c](const editor::ViewportEvent& e) { return c->on_viewport(e); });
  c->register_commands();
  p->register_commands(host);
}

void AiPlugin::on_frame(editor::Host&) {
  if (!controller_) return;
  controller_->frame();
  panel_->before_frame();
}

void AiPlugin::on_unload(editor::Host&) {
  if (controller_) controller_->shutdown();
  if (panel_) panel_->release_gl();
}

}  // namespace cubeforge::ai
