// Latency records, percentiles, JSON-lines log and CSV/JSON export. See latency.h.
#include "latency/latency.h"

#include "fileio/atomic_file.h"

#include <cubeforge/error.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

using nlohmann::json;

namespace cubeforge::ai {

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    std::size_t k = std::size_t(std::ceil(q * double(v.size())));
    k = std::clamp<std::size_t>(k, 1, v.size());
    return v[k - 1];
  };
  p.p50 = rank(0.50);
  p.p95 = rank(0.95);
  p.max = v.back();
  double s = 0;
  for (double x : v) s += x;
  p.mean = s / double(v.size());
  return p;
}

std::string iso_local_time_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

namespace {

json pj(const Percentiles& p) { return json{{"p50", p.p50}, {"p95", p.p95}, {"max", p.max}, {"mean", p.mean}, {"n", p.n}}; }
Percentiles pfrom(const json& j) {
  Percentiles p;
  if (!j.is_object()) return p;
  p.p50 = j.value("p50", 0.0);
  p.p95 = j.value("p95", 0.0);
  p.max = j.value("max", 0.0);
  p.mean = j.value("mean", 0.0);
  p.n = j.value("n", std::size_t(0));
  return p;
}

json record_json(const LatencyRecord& r) {
  return json{{"job", r.job},
              {"time", r.time},
              {"prompt", r.prompt},
              {"seed", r.seed},
              {"state", r.state},
              {"error", r.error},
              {"model", r.model},
              {"backend", r.backend},
              {"resolution", r.resolution},
              {"tokens", r.tokens},
              {"tokens_total", r.tokens_total},
              {"queue_ms", r.queue_ms},
              {"load_ms", r.load_ms},
              {"text_ms", r.text_ms},
              {"ttft_ms", r.ttft_ms},
              {"first_preview_ms", r.first_preview_ms},
              {"tpot_ms", pj(r.tpot_ms)},
              {"tokens_per_s", r.tokens_per_s},
              {"gpt_ms", r.gpt_ms},
              {"decode_ms", r.decode_ms},
              {"meshing_ms", r.meshing_ms},
              {"total_ms", r.total_ms},
              {"previews", r.previews},
              {"preview_ms", r.preview_ms},
              {"faces", r.faces},
              {"ui_frame_ms", pj(r.ui_frame_ms)},
              {"variations", r.variations}};
}

LatencyRecord record_from(const json& j) {
  LatencyRecord r;
  r.job = j.value("job", JobId(0));
  r.time = j.value("time", "");
  r.prompt = j.value("prompt", "");
  r.seed = j.value("seed", std::uint64_t(0));
  r.state = j.value("state", "");
  r.error = j.value("error", "");
  r.model = j.value("model", "");
  r.backend = j.value("backend", "");
  r.resolution = j.value("resolution", 0);
  r.tokens = j.value("tokens", 0);
  r.tokens_total = j.value("tokens_total", 0);
  r.queue_ms = j.value("queue_ms", 0.0);
  r.load_ms = j.value("load_ms", 0.0);
  r.text_ms = j.value("text_ms", 0.0);
  r.ttft_ms = j.value("ttft_ms", 0.0);
  r.first_preview_ms = j.value("first_preview_ms", 0.0);
  r.tpot_ms = pfrom(j.value("tpot_ms", json::object()));
  r.tokens_per_s = j.value("tokens_per_s", 0.0);
  r.gpt_ms = j.value("gpt_ms", 0.0);
  r.decode_ms = j.value("decode_ms", 0.0);
  r.meshing_ms = j.value("meshing_ms", 0.0);
  r.total_ms = j.value("total_ms", 0.0);
  r.previews = j.value("previews", 0);
  r.preview_ms = j.value("preview_ms", 0.0);
  r.faces = j.value("faces", std::size_t(0));
  r.ui_frame_ms = pfrom(j.value("ui_frame_ms", json::object()));
  r.variations = j.value("variations", 1);
  return r;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

void fill_from_stats(LatencyRecord& r, const GenerationStats& st) {
  r.tokens = int(st.token_ms.size());
  r.text_ms = st.text_ms;
  r.ttft_ms = st.ttft_ms;
  r.first_preview_ms = st.first_preview_ms;
  r.tpot_ms = percentiles(st.token_gaps_ms());
  if (st.token_ms.size() > 1) {
    const double span = st.token_ms.back() - st.token_ms.front();
    if (span > 0) r.tokens_per_s = double(st.token_ms.size() - 1) * 1000.0 / span;
  }
  r.gpt_ms = st.gpt_ms;
  r.decode_ms = st.latent_ms + st.occupancy_ms;
  r.meshing_ms = st.meshing_ms + st.cleanup_ms;
  r.previews = st.previews;
  r.preview_ms = st.preview_ms_total;
  r.total_ms = st.total_ms;
}

// The job-wide figures of several variations (LatencyRecord::variations says how they add up). Token times of every
// variation count from the same request start, so the first and last token bound the whole decode; the preview
// figures are the whole run's in every variation's stats (taken from variation 0).
void add_variations(LatencyRecord& r, const std::vector<std::shared_ptr<const JobOutput>>& outs) {
  r.variations = int(outs.size());
  std::vector<double> gaps;
  double first = 0, last = 0;
  r.tokens = r.tokens_total = 0;
  r.decode_ms = r.meshing_ms = 0;
  r.faces = 0;
  for (const auto& o : outs) {
    const GenerationStats& st = o->stats;
    const std::vector<double> g = st.token_gaps_ms();  // inside this variation only
    gaps.insert(gaps.end(), g.begin(), g.end());
    if (!st.token_ms.empty()) {
      first = r.tokens ? std::min(first, st.token_ms.front()) : st.token_ms.front();
      last = r.tokens ? std::max(last, st.token_ms.back()) : st.token_ms.back();
    }
    r.tokens += int(st.token_ms.size());
    r.tokens_total += int(o->tokens.size());
    r.decode_ms += st.latent_ms + st.occupancy_ms;
    r.meshing_ms += st.meshing_ms + st.cleanup_ms + o->decimate_ms;
    r.faces += o->mesh ? o->mesh->face_count() : 0;
  }
  r.tpot_ms = percentiles(gaps);
  r.tokens_per_s = r.tokens > 1 && last > first ? double(r.tokens - 1) * 1000.0 / (last - first) : 0;
  r.gpt_ms = r.tokens ? last - r.text_ms : 0;
}

}  // namespace

LatencyRecord make_record(const JobEvent& ev, const std::vector<double>& frame_ms, const std::string& model,
                          const std::string& backend) {
  LatencyRecord r;
  r.job = ev.job;
  r.time = iso_local_time_now();
  r.state = to_string(ev.state);
  if (ev.state != JobState::Done) r.error = ev.message;
  r.model = model;
  r.backend = backend;
  if (ev.spec) {
    r.prompt = ev.spec->request.prompt;
    r.seed = ev.spec->request.seed;
    r.resolution = ev.spec->mesh.resolution_base;
    r.variations = std::max(1, ev.spec->request.variations);
  }
  if (ev.output)
    fill_from_stats(r, ev.output->stats);
  else if (ev.partial)
    fill_from_stats(r, *ev.partial);
  if (ev.output) {
    r.queue_ms = ev.output->queue_ms;
    r.load_ms = ev.output->load_ms;
    r.meshing_ms += ev.output->decimate_ms;
    r.total_ms = ev.output->wall_ms;
    r.faces = ev.output->mesh ? ev.output->mesh->face_count() : 0;
    r.tokens_total = int(ev.output->tokens.size());
  }
  if (ev.outputs.size() > 1) add_variations(r, ev.outputs);
  r.ui_frame_ms = percentiles(frame_ms);
  return r;
}

std::string to_json(const LatencyRecord& r) { return record_json(r).dump(); }

std::vector<std::string> csv_columns() {
  return {"job", "time", "prompt", "seed", "state", "error", "model", "backend", "resolution", "tokens", "queue_ms",
          "load_ms", "text_ms", "ttft_ms", "first_preview_ms", "tpot_p50_ms", "tpot_p95_ms", "tpot_max_ms",
          "tokens_per_s", "gpt_ms", "decode_ms", "meshing_ms", "total_ms", "previews", "preview_ms", "faces",
          "ui_frame_p50_ms", "ui_frame_p95_ms", "ui_frame_max_ms", "variations"};
}

std::string to_csv_row(const LatencyRecord& r) {
  std::vector<std::string> f = {std::to_string(r.job), csv_field(r.time), csv_field(r.prompt), std::to_string(r.seed),
                                r.state, csv_field(r.error), csv_field(r.model), csv_field(r.backend),
                                std::to_string(r.resolution), std::to_string(r.tokens), num(r.queue_ms), num(r.load_ms),
                                num(r.text_ms), num(r.ttft_ms), num(r.first_preview_ms), num(r.tpot_ms.p50),
                                num(r.tpot_ms.p95), num(r.tpot_ms.max), num(r.tokens_per_s), num(r.gpt_ms),
                                num(r.decode_ms), num(r.meshing_ms), num(r.total_ms), std::to_string(r.previews),
                                num(r.preview_ms), std::to_string(r.faces), num(r.ui_frame_ms.p50),
                                num(r.ui_frame_ms.p95), num(r.ui_frame_ms.max), std::to_string(r.variations)};
  std::string out;
  for (std::size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + f[i];
  return out;
}

LatencyLog::LatencyLog(std::string path, std::shared_ptr<fileio::BackgroundWriter> writer, std::size_t keep)
    : path_(std::move(path)), keep_(keep), writer_(std::move(writer)) {
  if (path_.empty()) return;
  if (!writer_) writer_ = std::make_shared<fileio::BackgroundWriter>();
  std::ifstream in(path_);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    try {
      records_.push_back(record_from(json::parse(line)));
    } catch (const std::exception&) {
      // A torn last line (crash while appending) is skipped.
    }
  }
  if (records_.size() > keep_) records_.erase(records_.begin(), records_.end() - std::ptrdiff_t(keep_));
}

void LatencyLog::add(const LatencyRecord& r) {
  records_.push_back(r);
  if (records_.size() > keep_) records_.erase(records_.begin());
  // Appended, not the whole log rewritten: one short line per job, however long the log. The writer keeps the
  // appends in order (O_APPEND: concurrent editors cannot interleave inside a line).
  if (!path_.empty()) writer_->append(path_, to_json(r) + "\n");
}

void LatencyLog::clear() {
  records_.clear();
  if (!path_.empty()) writer_->write(path_, "");  // in order with the appends still waiting
}

std::string records_csv(const std::vector<LatencyRecord>& records) {
  std::string out;
  auto cols = csv_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i];
  out += "\n";
  for (const auto& r : records) out += to_csv_row(r) + "\n";
  return out;
}

std::string records_json(const std::vector<LatencyRecord>& records) {
  json arr = json::array();
  std::vector<double> ttft, fp, total, tpot50, tpot95, frame95, framemax;
  int done = 0, failed = 0, cancelled = 0;
  for (const auto& r : records) {
    arr.push_back(record_json(r));
    if (r.state == "done") {
      ++done;
      ttft.push_back(r.ttft_ms);
      if (r.previews > 0) fp.push_back(r.first_preview_ms);
      total.push_back(r.total_ms);
      tpot50.push_back(r.tpot_ms.p50);
      tpot95.push_back(r.tpot_ms.p95);
    } else if (r.state == "failed") {
      ++failed;
    } else {
      ++cancelled;
    }
    if (r.ui_frame_ms.n) {
      frame95.push_back(r.ui_frame_ms.p95);
      framemax.push_back(r.ui_frame_ms.max);
    }
  }
  json summary = {{"jobs", arr.size()},        {"done", done},
                  {"failed", failed},          {"cancelled", cancelled},
                  {"ttft_ms", pj(percentiles(ttft))},
                  {"first_preview_ms", pj(percentiles(fp))},
                  {"total_ms", pj(percentiles(total))},
                  {"tpot_p50_ms", pj(percentiles(tpot50))},
                  {"tpot_p95_ms", pj(percentiles(tpot95))},
                  {"ui_frame_p95_ms", pj(percentiles(frame95))},
                  {"ui_frame_max_ms", pj(percentiles(framemax))}};
  return json{{"generator", "cubeforge AI sidebar"}, {"summary", summary}, {"jobs", arr}}.dump(2) + "\n";
}

namespace {
void export_file(const std::string& path, const std::string& text) {
  fileio::create_parent_folders(path);
  fileio::atomic_write_file(path, text);
}
}  // namespace

void LatencyLog::export_csv(const std::string& path) const { export_file(path, records_csv(records_)); }
void LatencyLog::export_json(const std::string& path) const { export_file(path, records_json(records_)); }

}  // namespace cubeforge::ai
