// The editor's modal popups (see editor_ui.h): files dropped on the window, the path prompt of Open / Save As /
// Import / Export, and the error popup.
#include "editor_ui.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <filesystem>

namespace cubeforge::editor {
namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------------ popups
void EditorUI::on_drop(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    if (fs::path(p).extension() == ".cfscene") run_guarded("Open " + p, [&] { doc_.open(p); });
    else run_guarded("Import " + p, [&] { doc_.import_file(p); });
  }
}

void EditorUI::popups() {
  if (prompt_open_) {
    ImGui::OpenPopup("File###pathprompt");
    prompt_open_ = false;
  }
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.4f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(520, 0), ImGuiCond_Appearing);
  if (ImGui::BeginPopupModal("File###pathprompt", nullptr, ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::Text("%s: path", prompt_kind_.c_str());
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    ImGui::SetNextItemWidth(-1);
    bool enter = ImGui::InputText("##path", path_buf_, sizeof path_buf_, ImGuiInputTextFlags_EnterReturnsTrue);
    if (prompt_kind_ == "Import") {
      ImGui::Combo("Up axis", &import_up_, "Auto\0Y up\0Z up\0");
      ImGui::Checkbox("Normalise size to", &import_normalize_);
      ImGui::SameLine();
      ImGui::SetNextItemWidth(80);
      ImGui::DragFloat("units##size", &import_size_, 0.1f, 0.01f, 1000.f);
      ImGui::TextDisabled("glb gltf obj fbx ply stl (or drag files onto the window)");
    }
    if (prompt_kind_ == "Export") {
      ImGui::Checkbox("Selection only", &export_selection_);
      ImGui::TextDisabled(".glb .gltf .obj .ply .stl .fbx (ASCII)");
    }
    bool ok = ImGui::Button("OK", ImVec2(100, 0)) || enter;
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(100, 0)) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) ImGui::CloseCurrentPopup();
    if (ok && path_buf_[0]) {
      std::string p = path_buf_;
      ImGui::CloseCurrentPopup();
      if (prompt_kind_ == "Open") run_guarded("Open " + p, [&] { doc_.open(p); frame_selection(); });
      else if (prompt_kind_ == "Save As") run_guarded("Save " + p, [&] { doc_.save(p); });
      else if (prompt_kind_ == "Import") {
        ImportOptions opt;
        opt.up = import_up_ == 1 ? UpAxis::Y : import_up_ == 2 ? UpAxis::Z : UpAxis::Auto;
        opt.normalize_size = import_normalize_;
        opt.target_size = import_size_;
        opt.base_center = import_normalize_;
        run_guarded("Import " + p, [&] { doc_.import_file(p, opt); frame_selection(); });
      } else if (prompt_kind_ == "Export") run_guarded("Export " + p, [&] { doc_.export_file(p, export_selection_); });
      else if (prompt_kind_ == "Screenshot") run_guarded("Screenshot " + p, [&] { renderer_.save_png(p); doc_.log().info("screenshot " + p); });
    }
    ImGui::EndPopup();
  }

  if (!error_popup_.empty()) ImGui::OpenPopup("Error###err");
  if (ImGui::BeginPopupModal("Error###err", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::TextWrapped("%s", error_popup_.c_str());
    if (ImGui::Button("OK", ImVec2(100, 0)) || ImGui::IsKeyPressed(GLFW_KEY_ENTER)) {
      error_popup_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  if (recovery_popup_) ImGui::OpenPopup("Recover unsaved work?###recovery");
  if (ImGui::BeginPopupModal("Recover unsaved work?###recovery", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::TextUnformatted("Cubeforge did not exit cleanly last time. Restore the autosaved scene?");
    if (ImGui::Button("Recover", ImVec2(120, 0))) {
      run_guarded("Recover", [&] { doc_.load_recovery(); frame_selection(); });
      recovery_popup_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Discard", ImVec2(120, 0))) {
      Document::discard_recovery();
      recovery_popup_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  if (quit_requested_ && !quit_confirmed_) {
    if (!doc_.dirty()) quit_confirmed_ = true;
    else ImGui::OpenPopup("Unsaved changes###quit");
  }
  if (ImGui::BeginPopupModal("Unsaved changes###quit", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings)) {
    ImGui::Text("Save changes to %s before quitting?", doc_.path().empty() ? "the untitled scene" : doc_.path().c_str());
    if (ImGui::Button("Save", ImVec2(100, 0))) {
      if (doc_.path().empty()) {
        quit_requested_ = false;
        ImGui::CloseCurrentPopup();
        open_path_prompt("Save As", "scene.cfscene");
      } else {
        bool ok = true;
        try {
          doc_.save(doc_.path());
        } catch (const std::exception& ex) {
          ok = false;
          doc_.log().error(std::string("Save failed: ") + ex.what());
          error_popup_ = std::string("Save failed:\n") + ex.what();
        }
        quit_requested_ = false;
        quit_confirmed_ = ok;
        ImGui::CloseCurrentPopup();
      }
    }
    ImGui::SameLine();
    if (ImGui::Button("Don't save", ImVec2(100, 0))) {
      quit_confirmed_ = true;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(100, 0))) {
      quit_requested_ = false;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

}  // namespace cubeforge::editor
