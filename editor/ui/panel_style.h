// What the editor's ImGui panels share inside editor/ui (not part of the editor's API): the fixed-layout window
// flags.
#pragma once

#include <imgui.h>

namespace cubeforge::editor {

inline constexpr ImGuiWindowFlags kPanelFlags =
    ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings;

}  // namespace cubeforge::editor
