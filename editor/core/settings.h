// Editor settings and the configuration directory (~/.config/cubeforge, or $CUBEFORGE_CONFIG_DIR for tests).
// Settings are a flat JSON object persisted on change; plugins get their own files under plugins/.
#pragma once
#include <nlohmann/json.hpp>

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
  template <class T>
  void set(const std::string& key, const T& value) {
    nlohmann::json v = value;
    if (data_.contains(key) && data_[key] == v) return;
    data_[key] = std::move(v);
    save();
  }
  const nlohmann::json& data() const { return data_; }
  bool save();  // atomic; returns false (and keeps the values in memory) when the file cannot be written

 private:
  std::string path_;
  std::string load_error_;
  nlohmann::json data_ = nlohmann::json::object();
};

}  // namespace cubeforge::editor
