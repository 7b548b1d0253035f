// Editor settings and the configuration directory (~/.config/cubeforge, or $CUBEFORGE_CONFIG_DIR for tests).
// Settings are a flat JSON object persisted on change, by a background writer (the UI thread that changes a setting
// never waits on the disk); plugins get their own files under plugins/.
#pragma once
#include "fileio/background_writer.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace cubeforge::editor {

// $CUBEFORGE_CONFIG_DIR, else $XDG_CONFIG_HOME/cubeforge, else $HOME/.config/cubeforge (created on demand).
std::string config_dir();

class SettingsStore {
 public:
  SettingsStore() = default;
  explicit SettingsStore(std::string path) { open(std::move(path)); }
  // Loads the file if present (a corrupt file is moved aside as <file>.bad and defaults are used).
  void open(std::string path);
  const std::string& path() const { return path_; }
  const std::string& load_error() const { return load_error_; }

  template <class T>
  T get(const std::string& key, T def) const {
    auto it = data_.find(key);
    if (it == data_.end()) return def;
    try {
      return it->template get<T>();
    } catch (...) {
      return def;
    }
  }
  // Changes the value in memory at once and hands the file's new content to the background writer.
  template <class T>
  void set(const std::string& key, const T& value) {
    nlohmann::json v = value;
    if (data_.contains(key) && data_[key] == v) return;
    data_[key] = std::move(v);
    save_in_background();
  }
  const nlohmann::json& data() const { return data_; }
  // Writes the file now (atomically) and waits; false, with the values kept in memory, when it cannot be written.
  bool save();
  // Waits for the background writes of set(); false when one of them failed (save_error() says why). The destructor
  // waits for them too.
  bool flush();
  std::string save_error() const;

 private:
  void save_in_background();

  std::string path_;
  std::string load_error_;
  nlohmann::json data_ = nlohmann::json::object();
  std::unique_ptr<fileio::BackgroundWriter> writer_;  // created by the first write
};

}  // namespace cubeforge::editor
