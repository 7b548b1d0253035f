// Latency figures for testers: one LatencyRecord per finished job (done, cancelled or failed; one record for all the
// variations of a job), built from the library's GenerationStats plus what only the plugin sees (queue wait, UI
// frame times while the job ran), and a LatencyLog that appends every record to a JSON-lines file (through a
// background writer, so the UI thread never waits on the disk) and exports the whole log as CSV or JSON.
#pragma once
#include "worker/job.h"

#include "fileio/background_writer.h"

#include <memory>
#include <string>
#include <vector>

namespace cubeforge::ai {

struct Percentiles {
  double p50 = 0, p95 = 0, max = 0, mean = 0;
  std::size_t n = 0;
};
// Nearest-rank percentiles of a sample (empty sample: all zero).
Percentiles percentiles(std::vector<double> v);
// The current local time as ISO 8601 with the UTC offset (LatencyRecord::time; the history's entries use it too).
std::string iso_local_time_now();

struct LatencyRecord {
  JobId job = 0;
  std::string time;           // ISO 8601 local time the job ended
  std::string prompt;
  std::uint64_t seed = 0;
  std::string state;          // done / cancelled / failed
  std::string error;
  std::string model;
  std::string backend;
  int resolution = 0;
  int tokens = 0;             // tokens produced
  int tokens_total = 0;
  double queue_ms = 0;
  double load_ms = 0;
  double text_ms = 0;
  double ttft_ms = 0;         // request start → first token
  double first_preview_ms = 0;
  Percentiles tpot_ms;        // time per output token (intervals between tokens, previews included)
  double tokens_per_s = 0;
  double gpt_ms = 0;          // prefill + every decode step
  double decode_ms = 0;       // shape decode: latents + occupancy field
  double meshing_ms = 0;      // marching cubes + clean-up + decimation/fit
  double total_ms = 0;        // worker pickup → result
  int previews = 0;
  double preview_ms = 0;      // total time spent building previews
  std::size_t faces = 0;
  Percentiles ui_frame_ms;    // editor frame times while the job ran
  // Shapes the job made (GenerationRequest::variations). With more than one: tokens, shape decode, meshing and faces
  // are summed over them, TPOT comes from the gaps inside each variation, the decode rate counts every token from
  // the first to the last, GPT time runs from the end of the text stage to the last token, previews are the run's.
  int variations = 1;
};

// Fills a record from a job's terminal event; frame_ms are the UI frame times measured during the job.
LatencyRecord make_record(const JobEvent& ev, const std::vector<double>& frame_ms, const std::string& model,
                          const std::string& backend);

std::string to_json(const LatencyRecord& r);  // one line
std::vector<std::string> csv_columns();
std::string to_csv_row(const LatencyRecord& r);

// CSV (header + one row per record) and JSON ({"summary": percentiles over the done jobs, "jobs": [...]}).
std::string records_csv(const std::vector<LatencyRecord>& records);
std::string records_json(const std::vector<LatencyRecord>& records);

class LatencyLog {
 public:
  // path: JSON-lines file that every record is appended to (empty: memory only). Existing lines are read back.
  // writer: takes the appends (its take_failures() reports the ones that failed); null: a writer of the log's own,
  // which writes what is pending when the log is destroyed.
  explicit LatencyLog(std::string path = {}, std::shared_ptr<fileio::BackgroundWriter> writer = nullptr,
                      std::size_t keep = 10000);
  const std::string& path() const { return path_; }
  void add(const LatencyRecord& r);  // the line goes to the writer: never waits on the disk
  const std::vector<LatencyRecord>& records() const { return records_; }
  void clear();  // memory and file (emptied by the writer, after the lines still waiting)
  // The whole log as CSV / JSON, written now (a user's export: its outcome is the answer). Atomic write, missing
  // folders created; throws Error.
  void export_csv(const std::string& path) const;
  void export_json(const std::string& path) const;

 private:
  std::string path_;
  std::size_t keep_;
  std::vector<LatencyRecord> records_;
  std::shared_ptr<fileio::BackgroundWriter> writer_;
};

}  // namespace cubeforge::ai
