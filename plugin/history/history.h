// Generation history, kept across restarts in the plugin's own folder:
//   <dir>/history.json        index (newest last): prompt, seed, the full job settings, statistics, file names;
//                             one entry per variation of a job, each with its own seed (seed + v) and settings of
//                             one variation, so that regenerating it gives exactly that shape
//   <dir>/<id>.glb            the placed mesh (base-centred, Y up, as placed)
//   <dir>/<id>.png            its thumbnail (software-rendered, thumbnail.h)
// Every file is written through a temporary + rename. save_result() is safe on any thread (the worker calls it
// through WorkerOptions::finish); the HistoryStore object itself is UI-thread only and hands the index to a
// background writer, so it never waits on the disk. A corrupt index is moved aside as history.json.bad and the
// history starts empty (reported in load_error()).
#pragma once
#include "worker/job.h"

#include "fileio/background_writer.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace cubeforge::ai {

struct HistoryEntry {
  std::string id;
  std::string prompt;
  std::uint64_t seed = 0;
  std::string created;        // ISO 8601
  nlohmann::json spec;        // spec_to_json(JobSpec) of this shape alone (variations 1, its own seed)
  int variation = 0;          // which variation of its job (0-based); older files: 0
  int variations = 1;         // how many the job made; older files: 1
  std::size_t faces = 0, vertices = 0;
  double total_ms = 0;
  std::string mesh_file, thumb_file;  // names inside the history folder ("" when missing)
  // Runtime caches (not persisted).
  std::shared_ptr<const Mesh> mesh;
  std::shared_ptr<const RgbaImage> thumb;
  bool thumb_tried = false;
};

// Writes <dir>/<id>.glb and <dir>/<id>.png for a finished job and fills out.saved_id / out.thumbnail. Any thread.
void save_result(const std::string& dir, const JobSpec& spec, JobOutput& out);

class HistoryStore {
 public:
  // writer: takes the index writes (its take_failures() reports the ones that failed); null: a writer of the store's
  // own, which writes what is pending when the store is destroyed.
  explicit HistoryStore(std::string dir, std::shared_ptr<fileio::BackgroundWriter> writer = nullptr,
                        std::size_t max_entries = 200);
  const std::string& dir() const { return dir_; }
  std::string index_path() const;  // <dir>/history.json
  const std::string& load_error() const { return load_error_; }
  const std::vector<HistoryEntry>& entries() const { return entries_; }
  const HistoryEntry* find(const std::string& id) const;

  // Adds the entry for one output of a finished job (after save_result): `job` is the job's spec, out.variation
  // picks the variation. Trims the oldest beyond max_entries. Returns its id.
  std::string add(const JobSpec& job, const JobOutput& out);
  bool remove(const std::string& id);  // deletes its files too
  // The entry's mesh, loaded from its .glb on first use. Throws Error when the file is gone or unreadable.
  std::shared_ptr<const Mesh> mesh(const std::string& id);
  std::shared_ptr<const RgbaImage> thumbnail(const std::string& id);  // null when none
  void export_mesh_to(const std::string& id, const std::string& path);  // any format mesh_io knows
  void save_index() const;  // hands the index to the writer; returns at once

 private:
  HistoryEntry* find_mut(const std::string& id);
  std::string dir_;
  std::size_t max_;
  std::string load_error_;
  std::vector<HistoryEntry> entries_;
  std::shared_ptr<fileio::BackgroundWriter> writer_;
};

}  // namespace cubeforge::ai
