// Settings persistence.
#include "settings.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cubeforge::editor {
namespace fs = std::filesystem;

std::string config_dir() {
  fs::path dir;
  if (const char* c = std::getenv("CUBEFORGE_CONFIG_DIR"); c && *c) dir = c;
  else if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) dir = fs::path(x) / "cubeforge";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = fs::path(h) / ".config" / "cubeforge";
  else dir = fs::temp_directory_path() / "cubeforge";
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir.string();
}

void SettingsStore::open(std::string path) {
  if (writer_) writer_->flush();  // the previous file's pending content first
  path_ = std::move(path);
  load_error_.clear();
  data_ = nlohmann::json::object();
  std::ifstream in(path_);
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    auto j = nlohmann::json::parse(ss.str());
    if (j.is_object()) data_ = std::move(j);
    else throw std::runtime_error("not a JSON object");
  } catch (const std::exception& ex) {
    load_error_ = "settings " + path_ + " unreadable (" + ex.what() + "); using defaults";
    std::error_code ec;
    fs::rename(path_, path_ + ".bad", ec);
  }
}

void SettingsStore::save_in_background() {
  if (path_.empty()) return;
  if (!writer_) writer_ = std::make_unique<fileio::BackgroundWriter>();
  writer_->write(path_, data_.dump(2) + "\n");
}

bool SettingsStore::save() {
  if (path_.empty()) return false;
  save_in_background();  // through the writer, so an older background write cannot land after this one
  return writer_->flush();
}

bool SettingsStore::flush() { return !writer_ || writer_->flush(); }

std::string SettingsStore::save_error() const { return writer_ ? writer_->last_error() : std::string(); }

}  // namespace cubeforge::editor
