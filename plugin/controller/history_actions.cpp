// The AI sidebar's history actions (see controller.h): place, regenerate or vary a past result, export it, delete
// it, and the default export path named after its prompt and seed.
#include "controller/controller.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace cubeforge::ai {

using editor::EntityId;
using editor::kNoEntity;

namespace {
std::string sanitize_file_name(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')
      o += c;
    else if (c == ' ' && !o.empty() && o.back() != '-')
      o += '-';
    if (o.size() >= 40) break;
  }
  while (!o.empty() && o.back() == '-') o.pop_back();
  return o.empty() ? "generated" : o;
}
}  // namespace

EntityId Controller::history_place(const std::string& id, std::optional<Vec3> at) {
  const HistoryEntry* e = history_->find(id);
  if (!e) {
    message(MsgLevel::Error, "No such history entry.");
    return kNoEntity;
  }
  std::shared_ptr<const Mesh> mesh;
  try {
    mesh = history_->mesh(id);
  } catch (const std::exception& ex) {
    message(MsgLevel::Error, std::string("Cannot place from the history: ") + ex.what());
    return kNoEntity;
  }
  if (!at && !spot_chosen_) default_spot();
  const std::string prompt = e->prompt;
  EntityId placed = place(mesh, prompt, at ? *at : spot_, "Place: ");
  if (placed != kNoEntity) message(MsgLevel::Info, "Placed '" + short_prompt(prompt, 40) + "' from the history.");
  return placed;
}

JobId Controller::history_regenerate(const std::string& id) { return resubmit_history(id, false); }

JobId Controller::history_variation(const std::string& id) { return resubmit_history(id, true); }

JobId Controller::resubmit_history(const std::string& id, bool new_seed) {
  const HistoryEntry* e = history_->find(id);
  if (!e) return 0;
  if (busy()) {
    message(MsgLevel::Error, "A generation is already running: wait for it or press Cancel (Esc).");
    return 0;
  }
  try {
    JobSpec s = spec_from_json(e->spec);
    if (new_seed) s.request.seed = random_seed();
    return submit(std::move(s), form_.auto_place, new_seed ? "variation" : "regenerate");
  } catch (const std::exception& ex) {
    message(MsgLevel::Error, std::string(new_seed ? "Cannot make a variation: " : "Cannot regenerate: ") + ex.what());
    return 0;
  }
}

bool Controller::history_export(const std::string& id, const std::string& path) {
  try {
    history_->export_mesh_to(id, path);
    message(MsgLevel::Info, "Exported to " + path);
    return true;
  } catch (const std::exception& ex) {
    message(MsgLevel::Error, std::string("Export failed: ") + ex.what());
    return false;
  }
}

bool Controller::history_delete(const std::string& id) {
  try {
    return history_->remove(id);
  } catch (const std::exception& ex) {
    message(MsgLevel::Error, std::string("History not updated: ") + ex.what());
    return false;
  }
}

std::string Controller::default_export_path(const std::string& id, const std::string& ext) const {
  const HistoryEntry* e = history_->find(id);
  const char* home = std::getenv("HOME");
  const fs::path base = home && *home ? fs::path(home) / "cubeforge-exports" : fs::path(data_dir_) / "exports";
  const std::string name = e ? sanitize_file_name(e->prompt) + "-" + std::to_string(e->seed) : "generated";
  return (base / (name + ext)).string();
}

}  // namespace cubeforge::ai
