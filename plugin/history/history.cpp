// History persistence: see history.h.
#include "history/history.h"

#include "history/thumbnail.h"
#include "latency/latency.h"  // iso_local_time_now
#include "settings/settings.h"

#include <cubeforge/error.h>
#include <cubeforge/mesh_io.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace cubeforge::ai {

namespace {
std::string new_id() {
  static std::atomic<unsigned> counter{0};
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count() % 1000000;
  char tail[48];
  std::snprintf(tail, sizeof tail, "-%06lld-%u", static_cast<long long>(us), counter++ % 10000);
  return std::string(buf) + tail;
}

json entry_json(const HistoryEntry& e) {
  return json{{"id", e.id},       {"prompt", e.prompt},       {"seed", e.seed},
              {"created", e.created}, {"spec", e.spec},       {"faces", e.faces},
              {"vertices", e.vertices}, {"total_ms", e.total_ms}, {"mesh", e.mesh_file},
              {"thumbnail", e.thumb_file}, {"variation", e.variation}, {"variations", e.variations}};
}
}  // namespace

void save_result(const std::string& dir, const JobSpec& spec, JobOutput& out) {
  if (!out.mesh || out.mesh->empty()) return;  // nothing to keep
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string id = new_id();
  auto thumb = std::make_shared<RgbaImage>(render_thumbnail(*out.mesh));
  out.thumbnail = thumb;
  ExportOptions eo;
  eo.mesh_name = "generated";
  export_mesh(*out.mesh, (fs::path(dir) / (id + ".glb")).string(), eo);
  write_png(*thumb, (fs::path(dir) / (id + ".png")).string());
  out.saved_id = id;
  (void)spec;
}

HistoryStore::HistoryStore(std::string dir, std::shared_ptr<fileio::BackgroundWriter> writer, std::size_t max_entries)
    : dir_(std::move(dir)), max_(max_entries), writer_(std::move(writer)) {
  if (!writer_) writer_ = std::make_shared<fileio::BackgroundWriter>();
  const fs::path index = index_path();
  std::error_code ec;
  if (!fs::exists(index, ec)) return;
  try {
    std::ifstream in(index);
    json j = json::parse(in);
    if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array()) throw Error("no 'entries' array");
    for (const auto& x : j["entries"]) {
      HistoryEntry e;
      e.id = x.at("id").get<std::string>();
      e.prompt = x.value("prompt", "");
      e.seed = x.value("seed", std::uint64_t(0));
      e.created = x.value("created", "");
      e.spec = x.value("spec", json::object());
      e.faces = x.value("faces", std::size_t(0));
      e.vertices = x.value("vertices", std::size_t(0));
      e.total_ms = x.value("total_ms", 0.0);
      e.mesh_file = x.value("mesh", "");
      e.thumb_file = x.value("thumbnail", "");
      e.variation = x.value("variation", 0);
      e.variations = x.value("variations", 1);
      entries_.push_back(std::move(e));
    }
  } catch (const std::exception& ex) {
    entries_.clear();
    load_error_ = "history index '" + index.string() + "' is corrupt (" + ex.what() + "); moved aside as history.json.bad";
    fs::rename(index, fs::path(dir_) / "history.json.bad", ec);
  }
}

const HistoryEntry* HistoryStore::find(const std::string& id) const {
  for (const auto& e : entries_)
    if (e.id == id) return &e;
  return nullptr;
}

HistoryEntry* HistoryStore::find_mut(const std::string& id) {
  for (auto& e : entries_)
    if (e.id == id) return &e;
  return nullptr;
}

std::string HistoryStore::add(const JobSpec& job, const JobOutput& out) {
  const JobSpec spec = variation_spec(job, out.variation);
  HistoryEntry e;
  e.id = out.saved_id.empty() ? new_id() : out.saved_id;
  e.prompt = spec.request.prompt;
  e.seed = spec.request.seed;
  e.created = iso_local_time_now();
  e.spec = spec_to_json(spec);
  e.variation = out.variation;
  e.variations = std::max(1, job.request.variations);
  e.faces = out.mesh ? out.mesh->face_count() : 0;
  e.vertices = out.mesh ? out.mesh->vertex_count() : 0;
  e.total_ms = out.wall_ms;
  if (!out.saved_id.empty()) {
    e.mesh_file = out.saved_id + ".glb";
    e.thumb_file = out.saved_id + ".png";
  }
  e.mesh = out.mesh;
  e.thumb = out.thumbnail;
  e.thumb_tried = true;
  entries_.push_back(std::move(e));
  while (entries_.size() > max_) remove(entries_.front().id);
  save_index();
  return entries_.back().id;
}

bool HistoryStore::remove(const std::string& id) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->id != id) continue;
    std::error_code ec;
    if (!it->mesh_file.empty()) fs::remove(fs::path(dir_) / it->mesh_file, ec);
    if (!it->thumb_file.empty()) fs::remove(fs::path(dir_) / it->thumb_file, ec);
    entries_.erase(it);
    save_index();
    return true;
  }
  return false;
}

std::shared_ptr<const Mesh> HistoryStore::mesh(const std::string& id) {
  HistoryEntry* e = find_mut(id);
  if (!e) throw Error("no history entry '" + id + "'");
  if (e->mesh) return e->mesh;
  if (e->mesh_file.empty()) throw Error("history entry '" + e->prompt + "' has no saved mesh");
  const fs::path p = fs::path(dir_) / e->mesh_file;
  ImportOptions io;
  io.weld = false;
  e->mesh = std::make_shared<const Mesh>(import_mesh(p.string(), io));
  return e->mesh;
}

std::shared_ptr<const RgbaImage> HistoryStore::thumbnail(const std::string& id) {
  HistoryEntry* e = find_mut(id);
  if (!e) return nullptr;
  if (e->thumb || e->thumb_tried) return e->thumb;
  e->thumb_tried = true;
  if (e->thumb_file.empty()) return nullptr;
  try {
    e->thumb = std::make_shared<const RgbaImage>(read_png((fs::path(dir_) / e->thumb_file).string()));
  } catch (const std::exception&) {
    e->thumb = nullptr;
  }
  return e->thumb;
}

void HistoryStore::export_mesh_to(const std::string& id, const std::string& path) {
  auto m = mesh(id);
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  ExportOptions eo;
  eo.mesh_name = "generated";
  export_mesh(*m, path, eo);
}

std::string HistoryStore::index_path() const { return (fs::path(dir_) / "history.json").string(); }

void HistoryStore::save_index() const {
  json arr = json::array();
  for (const auto& e : entries_) arr.push_back(entry_json(e));
  writer_->write(index_path(), json{{"version", 1}, {"entries", arr}}.dump(1));
}

}  // namespace cubeforge::ai
