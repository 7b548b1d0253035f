// The AI sidebar's UI-thread logic (see controller.h): the form and settings, jobs and their events, finished
// results into the history and latency log, batch runs and reports. The viewport side (spot, bbox gizmo, overlay,
// placing) is in viewport.cpp, the history actions in history_actions.cpp, the script commands in commands.cpp.
#include "controller/controller.h"

#include "appearance/prompt_colour.h"
#include "worker/cube3d_backend.h"

#include <cubeforge/error.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;
using nlohmann::json;

namespace cubeforge::ai {

using editor::EntityId;
using editor::kNoEntity;

namespace {
std::string seconds(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10000 ? "%.2f s" : "%.1f s", ms / 1000.0);
  return buf;
}
}  // namespace

Controller::Controller(editor::Host& host, ControllerOptions options)
    : host_(host), opt_(std::move(options)), rng_(std::random_device{}()) {
  if (!opt_.backend) opt_.backend = make_cube3d_backend();
  default_model_dir_ = opt_.default_model_dir.empty() ? default_model_dir() : opt_.default_model_dir;
  data_dir_ = opt_.data_dir.empty() ? host_.config_dir() : opt_.data_dir;
  try {
    form_ = form_from_json(json::parse(host_.setting("form", "{}")));
  } catch (const std::exception&) {
    form_ = FormSettings{};
  }
  writer_ = std::make_shared<fileio::BackgroundWriter>(opt_.write_hook);
  history_ = std::make_unique<HistoryStore>((fs::path(data_dir_) / "history").string(), writer_);
  if (!history_->load_error().empty()) message(MsgLevel::Warning, history_->load_error());
  latency_ = std::make_unique<LatencyLog>((fs::path(data_dir_) / "latency.jsonl").string(), writer_);

  WorkerOptions wo = opt_.worker;
  editor::Host* h = &host_;
  wo.wake = [h] { h->request_redraw(); };
  const std::string hist_dir = history_->dir();
  auto user_finish = opt_.worker.finish;
  wo.finish = [hist_dir, user_finish](const JobSpec& s, JobOutput& o) {
    if (user_finish) user_finish(s, o);
    save_result(hist_dir, s, o);
  };
  worker_ = std::make_unique<Worker>(opt_.backend, std::move(wo));
  if (opt_.preload) worker_->load_model(model_dir());
  last_frame_at_ = 0;
}

Controller::~Controller() { shutdown(); }

void Controller::shutdown() {
  if (shut_) return;
  shut_ = true;
  if (worker_) worker_->shutdown();
  if (settings_dirty_) save_settings_now();
  writer_->flush();  // nothing handed over is lost when the plugin goes
  poll_writes();     // its failures reach the log; a batch report written completes the batch
}

void Controller::message(MsgLevel l, std::string text) {
  if (l != MsgLevel::Info) host_.log(l == MsgLevel::Error ? editor::LogLevel::Error : editor::LogLevel::Warning, text);
  messages_.push_back({l, std::move(text)});
  if (messages_.size() > 8) messages_.erase(messages_.begin());
}

void Controller::form_changed() {
  settings_dirty_ = true;
  settings_changed_at_ = now_ms();
}

std::string Controller::edit_form(const json& args) {
  FormSettings f = form_;
  apply_json(f, args);
  if (args.contains("variations")) {
    std::string why = check_variations(args["variations"].get<int>(), f.top_p);
    if (!why.empty()) {
      message(MsgLevel::Error, why);
      return why;
    }
  }
  form_ = f;
  form_changed();
  return {};
}

void Controller::save_settings_now() {
  settings_dirty_ = false;
  try {
    host_.set_setting("form", to_json(form_).dump());
  } catch (const std::exception& e) {
    host_.log(editor::LogLevel::Warning, std::string("AI settings not saved: ") + e.what());
  }
}

std::string Controller::model_dir() const { return form_.use_default_model ? default_model_dir_ : form_.model_dir; }

void Controller::select_model(bool use_default, const std::string& dir) {
  form_.use_default_model = use_default;
  if (!use_default) form_.model_dir = dir;
  form_changed();
  prompt_check_.invalidate();
  negative_check_.invalidate();
  worker_->load_model(model_dir());
  model_.state = ModelStatus::State::Loading;
  model_.dir = model_dir();
  model_.fraction = 0;
  model_.error.clear();
  model_.info.reset();
}

const PromptCheck& PromptCheckCache::get(const ModelInfo* info, const std::string& text) {
  if (!valid_ || text_ != text || info_ != info) {
    text_ = text;
    info_ = info;
    check_ = check_prompt(info, text);
    valid_ = true;
  }
  return check_;
}

const PromptCheck& Controller::prompt_check() { return prompt_check_.get(model_.info.get(), form_.prompt); }

const PromptCheck& Controller::negative_prompt_check() {
  if (!(form_.guidance > 0)) return no_check_;
  return negative_check_.get(model_.info.get(), form_.negative_prompt);
}

std::string Controller::unknown_words_message(const PromptCheck& pc) const {
  if (pc.unknown_words.empty()) return {};
  std::string s = "unknown words: ";
  for (std::size_t i = 0; i < pc.unknown_words.size(); ++i) s += (i ? ", " : "") + pc.unknown_words[i];
  s += " (the model will ignore them)";
  if (model_.info && !model_.info->known_words.empty()) {
    s += form_.use_default_model ? "; the default model knows these objects: " : "; this model knows these objects: ";
    const auto& kw = model_.info->known_words;
    const std::size_t n = std::min<std::size_t>(kw.size(), 12);
    for (std::size_t i = 0; i < n; ++i) s += (i ? ", " : "") + kw[i];
    if (kw.size() > n) s += ", ... (" + std::to_string(kw.size()) + " in all: see the list under the prompt)";
  }
  return s;
}

std::uint64_t Controller::random_seed() { return rng_() & 0xffffffffull; }

// ---------------------------------------------------------------------------------------------------------------
void Controller::frame() {
  const double t = now_ms();
  if (last_frame_at_ > 0) {
    const double dt = t - last_frame_at_;
    recent_frames_.push_back(dt);
    while (recent_frames_.size() > 120) recent_frames_.pop_front();
    for (auto& [id, v] : jobs_)
      if (v.state != JobState::Queued) {
        v.frame_ms.push_back(dt);
      }
  }
  last_frame_at_ = t;

  Mail m = worker_->poll();
  if (m.model) {
    model_ = *m.model;
    prompt_check_.invalidate();
    negative_check_.invalidate();
  }
  if (m.preview) {
    auto it = jobs_.find(m.preview->job);
    if (it != jobs_.end()) {
      it->second.preview = m.preview->mesh;
      it->second.preview_bounds = m.preview->mesh ? mesh_bounds(*m.preview->mesh) : Bounds{};
      if (it->second.previews_seen == 0) it->second.first_preview_tokens = m.preview->tokens_done;
      it->second.preview_tokens = m.preview->tokens_done;
      it->second.previews_seen += std::max(1, m.previews);
    }
  }
  if (m.progress) {
    auto it = jobs_.find(m.progress->job);
    if (it != jobs_.end()) {
      it->second.progress = *m.progress;
      if (it->second.progress.tokens_total == 0 && model_.info)
        it->second.progress.tokens_total = model_.info->num_tokens * it->second.progress.variations;
    }
  }
  for (const auto& ev : m.events) handle_event(ev);

  const bool writing = poll_writes();

  if (settings_dirty_ && t - settings_changed_at_ > 400) save_settings_now();
  // Keep the editor drawing while a job runs (progress, ghost, and frame times that measure frames, not the idle
  // wait of an event-driven loop), and while files are being written (their outcome is taken here); it goes back
  // to waiting for events when they end.
  if (busy() || writing || model_.state == ModelStatus::State::Loading) host_.request_redraw();
}

bool Controller::poll_writes() {
  const bool writing = writer_->busy();  // first: a write that ended before this has its failure listed below
  Batch* report = batch_ && batch_->report_pending ? &*batch_ : nullptr;
  for (auto& [path, error] : writer_->take_failures()) {
    if (report && (path == report->csv_path || path == report->json_path)) {
      if (report->report_error.empty()) report->report_error = error;
    } else {
      message(MsgLevel::Warning, file_role(path) + " not saved: " + error);
    }
  }
  if (report && !writing) {
    report->report_pending = false;
    report->complete = true;
    if (!report->report_error.empty()) {
      message(MsgLevel::Error, "Batch report not written: " + report->report_error);
    } else {
      const std::string& file = report->csv_path.empty() ? report->json_path : report->csv_path;
      message(MsgLevel::Info, "Batch of " + std::to_string(report->jobs.size()) + " prompts finished (" +
                                  std::to_string(report->done) + " done, " + std::to_string(report->failed) +
                                  " failed); report: " + file);
    }
  }
  return writing;
}

std::string Controller::file_role(const std::string& path) const {
  if (path == history_->index_path()) return "History";
  if (path == latency_->path()) return "Latency log";
  return "File '" + path + "'";
}

void Controller::handle_event(const JobEvent& ev) {
  auto it = jobs_.find(ev.job);
  if (it == jobs_.end()) return;
  JobView& v = it->second;
  if (ev.state == JobState::Queued) return;
  v.state = ev.state;
  v.progress.state = ev.state;
  if (!is_terminal(ev.state)) return;
  finish_job(ev, v);
  jobs_.erase(it);
}

void Controller::finish_job(const JobEvent& ev, JobView& v) {
  const std::string model_name = model_.info ? model_.info->name : fs::path(v.spec ? v.spec->model_dir : "").filename().string();
  const std::string backend = model_.info ? model_.info->backend : "";
  LatencyRecord rec = make_record(ev, v.frame_ms, model_name, backend);
  latency_->add(rec);

  last_ = LastJob{};
  last_.id = ev.job;
  last_.state = ev.state;
  last_.prompt = v.spec ? v.spec->request.prompt : "";
  last_.message = ev.message;
  last_.previews_seen = v.previews_seen;
  last_.preview_tokens_first = v.first_preview_tokens;
  last_.variations = v.spec ? std::max(1, v.spec->request.variations) : 1;
  std::string label = "'";  // appended, not "'" + string: GCC 12 warns (-Wrestrict) on that form's inlined copy
  label += short_prompt(last_.prompt, 40);
  label += '\'';

  if (ev.state == JobState::Done && ev.output) {
    finish_done(ev, v, label);
  } else if (ev.state == JobState::Cancelled) {
    const int tokens = ev.partial ? int(ev.partial->token_ms.size()) : 0;
    message(MsgLevel::Info, "Cancelled " + label + (tokens ? " after " + std::to_string(tokens) + " tokens" : ""));
  } else if (ev.state == JobState::Failed) {
    message(MsgLevel::Error, "Generation of " + label + " failed: " + ev.message);
  }

  if (batch_ && !batch_->complete && !batch_->report_pending) {
    Batch& b = *batch_;
    if (std::find(b.jobs.begin(), b.jobs.end(), ev.job) != b.jobs.end()) {
      b.finished++;
      if (ev.state == JobState::Done) b.done++;
      if (ev.state == JobState::Failed) b.failed++;
      if (ev.state == JobState::Cancelled) b.cancelled++;
      b.records.push_back(rec);
      if (b.finished == b.jobs.size()) write_batch_report(b);
    }
  }
}

void Controller::write_batch_report(Batch& b) {
  if (!b.csv_path.empty()) writer_->write(b.csv_path, records_csv(b.records));
  if (!b.json_path.empty()) writer_->write(b.json_path, records_json(b.records));
  b.report_pending = true;  // poll_writes() completes the batch once the writer is done
}

void Controller::warn_about_stats(const GenerationStats& st, const JobView& v) {
  if (st.prompt_truncated && !v.prompt_checked)
    message(MsgLevel::Warning, "The prompt was longer than 77 tokens and was truncated: the end of it was ignored.");
  if (st.negative_prompt_truncated && !v.prompt_checked)
    message(MsgLevel::Warning,
            "The negative prompt was longer than 77 tokens and was truncated: the end of it was ignored.");
  if (!st.unknown_words.empty() && !v.prompt_checked && v.purpose != "batch") {
    PromptCheck pc;
    pc.unknown_words = st.unknown_words;
    message(MsgLevel::Warning, unknown_words_message(pc));
  }
  if (st.backend.find("failed") != std::string::npos)
    message(MsgLevel::Warning, "The GPU failed during this generation, so it finished on the CPU: " + st.backend);
}

std::string Controller::keep_in_history(const JobSpec& job, const JobOutput& out) {
  if (!out.save_error.empty()) message(MsgLevel::Warning, "The result was not saved to the history: " + out.save_error);
  try {
    return history_->add(job, out);
  } catch (const std::exception& e) {
    message(MsgLevel::Warning, std::string("history not updated: ") + e.what());
    return {};
  }
}

void Controller::finish_done(const JobEvent& ev, const JobView& v, const std::string& label) {
  warn_about_stats(ev.output->stats, v);
  const auto& outs = ev.outputs.empty() ? std::vector<std::shared_ptr<const JobOutput>>{ev.output} : ev.outputs;
  const int n = int(outs.size());
  const JobOutput* shown = nullptr;  // the first variation with a surface: placed when asked
  std::string empty_seeds;
  for (const auto& out : outs) {
    if (!out->mesh || out->mesh->empty()) {
      empty_seeds += (empty_seeds.empty() ? "" : ", ") + std::to_string(out->seed);
      continue;
    }
    const std::string id = keep_in_history(*ev.spec, *out);
    if (!id.empty()) last_.history_ids.push_back(id);
    if (shown) continue;
    shown = out.get();
    last_.history_id = id;
    last_.faces = out->mesh->face_count();
  }
  if (!empty_seeds.empty()) {
    message(MsgLevel::Warning, "The model produced no surface for " + label + " (seed " + empty_seeds + ")" +
                                   (shown ? "." : ": nothing to place. Try another seed or prompt."));
  }
  if (!shown) return;
  if (v.place_when_done) last_.placed = place(shown->mesh, last_.prompt, v.spot);
  std::string text = "Generated " + (n > 1 ? std::to_string(n) + " variations of " : std::string()) + label + " in " +
                     seconds(shown->wall_ms) + ": " + std::to_string(last_.faces) + " faces";
  if (shown->faces_before_cap > last_.faces) text += " (from " + std::to_string(shown->faces_before_cap) + ")";
  if (n > 1) text += " (variation " + std::to_string(shown->variation + 1) + ")";
  if (last_.placed != kNoEntity) text += "; placed (Ctrl+Z undoes it)";
  const int others = int(last_.history_ids.size()) - (last_.placed != kNoEntity ? 1 : 0);
  if (n > 1 && others > 0) {
    const bool placed = last_.placed != kNoEntity;
    if (others == 1)
      text += placed ? "; the other one is in the history to place" : "; it is in the history to place";
    else
      text += (placed ? "; the other " : "; all ") + std::to_string(others) + " are in the history to place";
  }
  message(MsgLevel::Info, text);
}

// ---------------------------------------------------------------------------------------------------------------
JobId Controller::generate() {
  messages_.clear();
  const PromptCheck& pc = prompt_check();
  if (pc.empty) {
    message(MsgLevel::Error, "Type a prompt first: the prompt is empty.");
    return 0;
  }
  if (busy()) {
    message(MsgLevel::Error, "A generation is already running: wait for it or press Cancel (Esc).");
    return 0;
  }
  const std::string dir = model_dir();
  if (std::string why = check_model_dir(dir); !why.empty()) {
    message(MsgLevel::Error, "Bad model directory: " + why +
                                 (form_.use_default_model ? ". Set CUBEFORGE_MODEL_DIR or choose a model directory above."
                                                          : ". Choose a directory with config.yaml, shape_gpt.safetensors, "
                                                            "shape_tokenizer.safetensors and clip/."));
    return 0;
  }
  if (model_.state == ModelStatus::State::Failed && model_.dir == dir) {
    message(MsgLevel::Error, "The model could not be loaded: " + model_.error + " (fix the files, then press Reload)");
    return 0;
  }
  const bool bbox = form_.use_bbox && model_takes_bbox();
  if (bbox) {
    if (std::string why = check_bbox(form_.bbox); !why.empty()) {
      message(MsgLevel::Error, why);
      return 0;
    }
  }
  // Warnings (the job still runs).
  if (pc.truncated) {
    message(MsgLevel::Warning, "The prompt is " + std::to_string(pc.tokens) +
                                   " tokens; the text encoder reads at most 75 (77 with start/end), so it will be "
                                   "truncated and the end ignored.");
  }
  if (!pc.unknown_words.empty()) message(MsgLevel::Warning, unknown_words_message(pc));
  const PromptCheck& npc = negative_prompt_check();
  if (npc.truncated) {
    message(MsgLevel::Warning, "The negative prompt is " + std::to_string(npc.tokens) +
                                   " tokens; the text encoder reads at most 75, so its end will be ignored.");
  }
  if (!npc.unknown_words.empty()) message(MsgLevel::Warning, "Negative prompt: " + unknown_words_message(npc));
  JobSpec spec = make_spec(form_, dir, model_takes_bbox());
  const JobId id = submit(std::move(spec), form_.auto_place, "generate");
  // Checked here when the model (and its tokenizer) was already loaded; otherwise the job's stats report it.
  jobs_[id].prompt_checked = model_.info && model_.info->tokenizer;
  if (form_.new_seed_each_run) {
    form_.seed = random_seed();
    form_changed();
  }
  return id;
}

JobId Controller::submit(JobSpec spec, bool place, const std::string& purpose) {
  if (!spot_chosen_) default_spot();
  JobView v;
  v.spec = std::make_shared<const JobSpec>(spec);
  v.place_when_done = place;
  v.spot = spot_;
  v.purpose = purpose;
  v.progress.variations = std::max(1, spec.request.variations);
  v.progress.tokens_total = (model_.info ? model_.info->num_tokens : 0) * v.progress.variations;
  const JobId id = worker_->submit(std::move(spec));
  v.id = id;
  v.progress.job = id;
  jobs_[id] = std::move(v);
  return id;
}

void Controller::cancel() {
  if (jobs_.empty()) return;
  worker_->cancel_all();
  message(MsgLevel::Info, "Cancelling...");
}

const JobView* Controller::current() const {
  for (const auto& [id, v] : jobs_)
    if (v.state != JobState::Queued) return &v;
  return jobs_.empty() ? nullptr : &jobs_.begin()->second;
}

// ---------------------------------------------------------------------------------------------------------------
bool Controller::export_latency(const std::string& csv_path, const std::string& json_path) {
  try {
    if (!csv_path.empty()) latency_->export_csv(csv_path);
    if (!json_path.empty()) latency_->export_json(json_path);
    message(MsgLevel::Info, "Latency log (" + std::to_string(latency_->records().size()) + " jobs) written to " +
                                (csv_path.empty() ? json_path : csv_path + (json_path.empty() ? "" : " and " + json_path)));
    return true;
  } catch (const std::exception& e) {
    message(MsgLevel::Error, std::string("Latency export failed: ") + e.what());
    return false;
  }
}

double Controller::frame_ms_recent() const {
  if (recent_frames_.empty()) return 0;
  const std::size_t n = std::min<std::size_t>(recent_frames_.size(), 60);
  double s = 0;
  for (std::size_t i = recent_frames_.size() - n; i < recent_frames_.size(); ++i) s += recent_frames_[i];
  return s / double(n);
}

double Controller::frame_ms_max_recent() const {
  double m = 0;
  for (double x : recent_frames_) m = std::max(m, x);
  return m;
}

std::string Controller::default_report_path(const std::string& ext) const {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "latency-%Y%m%d-%H%M%S", &tm);
  return (fs::path(data_dir_) / "reports" / (std::string(buf) + ext)).string();
}

bool Controller::run_batch(const std::vector<std::string>& prompts, const std::string& csv, const std::string& json_path,
                           bool place, std::optional<int> nice) {
  messages_.clear();
  if (prompts.empty()) {
    message(MsgLevel::Error, "The batch has no prompts.");
    return false;
  }
  if (busy()) {
    message(MsgLevel::Error, "A generation is already running: wait for it or cancel it before a batch.");
    return false;
  }
  const std::string dir = model_dir();
  if (std::string why = check_model_dir(dir); !why.empty()) {
    message(MsgLevel::Error, "Bad model directory: " + why);
    return false;
  }
  for (const auto& p : prompts)
    if (check_prompt(nullptr, p).empty) {
      message(MsgLevel::Error, "The batch contains an empty prompt.");
      return false;
    }
  Batch b;
  b.prompts = prompts;
  b.csv_path = csv;
  b.json_path = json_path;
  for (const auto& p : prompts) {
    FormSettings f = form_;
    f.prompt = p;
    JobSpec spec = make_spec(f, dir, model_takes_bbox());
    spec.nice = nice;
    b.jobs.push_back(submit(std::move(spec), place, "batch"));
  }
  batch_ = std::move(b);
  message(MsgLevel::Info, "Running a batch of " + std::to_string(prompts.size()) + " prompts...");
  return true;
}

}  // namespace cubeforge::ai
