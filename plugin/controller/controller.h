// The AI sidebar's UI-thread logic, independent of ImGui and GL: the form and its validation messages, the model
// selector, job tracking (progress, previews, frame times), click-to-place and the ghost overlay, placement as one
// named undo step (of the first variation when a job makes several; each variation becomes a history entry of its
// own seed), the history actions, the latency log and batch runs. The ImGui panel (ui/panel.*) only draws
// from it and calls into it; the script commands (commands.cpp) drive the same calls, so tests exercise the real
// logic through a headless editor PluginHost.
//
// Threads: everything here runs on the editor's main thread. The worker (worker/) owns the model; frame() drains
// its mailbox once per frame and never waits on it. The history index, the latency log and batch reports go to a
// BackgroundWriter (editor/fileio) owned here: frame() takes its failures without waiting (as messages; a batch
// report's as the batch's report_error), and shutdown() waits until everything handed over is written.
#pragma once
#include "history/history.h"
#include "latency/latency.h"
#include "placement/placement.h"
#include "settings/settings.h"
#include "worker/worker.h"

#include "fileio/background_writer.h"

#include <cubeforge/editor/plugin_api.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace cubeforge::ai {

enum class MsgLevel { Info, Warning, Error };
struct Message {
  MsgLevel level = MsgLevel::Info;
  std::string text;
};

// A job as the UI sees it (the running one, or queued ones).
struct JobView {
  JobId id = 0;
  JobState state = JobState::Queued;
  std::shared_ptr<const JobSpec> spec;
  JobProgress progress;
  std::shared_ptr<const Mesh> preview;
  Bounds preview_bounds;
  int preview_tokens = 0;
  int previews_seen = 0;        // previews drained by the UI before the job ended
  int first_preview_tokens = 0; // tokens done at the first preview the UI received
  bool place_when_done = false;
  Vec3 spot{0.f, 0.f, 0.f};
  std::vector<double> frame_ms; // UI frame times while the job was active (not queued)
  std::string purpose;          // "generate", "regenerate", "variation", "batch"
  bool prompt_checked = false;  // truncation / unknown words were already reported when it was submitted
};

// Figures of the most recent finished job (for the HUD and status).
struct LastJob {
  JobId id = 0;
  JobState state = JobState::Queued;
  std::string prompt;
  std::string message;
  int previews_seen = 0;
  int preview_tokens_first = 0;  // tokens done at the first preview the UI showed
  editor::EntityId placed = editor::kNoEntity;
  std::string history_id;                 // of the shape placed (or to place): the first variation with a surface
  std::vector<std::string> history_ids;   // every variation kept in the history, in order
  int variations = 1;
  std::size_t faces = 0;
};

struct Batch {
  std::vector<JobId> jobs;
  std::vector<std::string> prompts;
  std::string csv_path, json_path;
  std::size_t finished = 0, done = 0, failed = 0, cancelled = 0;
  bool complete = false;        // every job ended and the report was written (or report_error says why not)
  bool report_pending = false;  // every job ended; the report is with the background writer
  std::string report_error;
  std::vector<LatencyRecord> records;
};

struct ControllerOptions {
  std::shared_ptr<ModelBackend> backend;   // default: the Cube3D backend
  std::string default_model_dir;           // default: default_model_dir()
  std::string data_dir;                    // history/ and latency.jsonl; default: Host::config_dir()
  WorkerOptions worker;                    // wake and finish are filled in by the controller
  bool preload = true;                     // load the model at start
  fileio::FaultHook write_hook;            // tests: the background writer's hook (park or fail its writes)
};

// check_prompt of one text against the loaded model, recomputed only when the text or the model changes.
class PromptCheckCache {
 public:
  const PromptCheck& get(const ModelInfo* info, const std::string& text);
  void invalidate() { valid_ = false; }

 private:
  std::string text_;
  const ModelInfo* info_ = nullptr;
  PromptCheck check_;
  bool valid_ = false;
};

class Controller {
 public:
  Controller(editor::Host& host, ControllerOptions options);
  ~Controller();
  void shutdown();  // stops the worker (joins), saves settings

  // Once per frame on the main thread.
  void frame();

  // ---- form & model ----
  FormSettings& form() { return form_; }
  void form_changed();  // saves the settings shortly after the last change
  // Applies script arguments (form keys) to the form when they are valid together; else leaves it unchanged, shows
  // the error and returns it (a variation count out of range, or more than one with greedy sampling). Throws Error
  // on a value of the wrong type.
  std::string edit_form(const nlohmann::json& args);
  std::string model_dir() const;
  const std::string& default_model() const { return default_model_dir_; }
  void select_model(bool use_default, const std::string& dir = {});  // (re)loads in the background
  const ModelStatus& model() const { return model_; }
  const ModelInfo* model_info() const { return model_.info.get(); }
  bool model_takes_bbox() const { return model_.info && model_.info->use_bbox; }
  const PromptCheck& prompt_check();  // of form().prompt against the loaded model (cached)
  // of form().negative_prompt (cached); empty when guidance is off, where the negative prompt is not used
  const PromptCheck& negative_prompt_check();
  std::string unknown_words_message(const PromptCheck& pc) const;
  std::uint64_t random_seed();

  // ---- generation ----
  // Validates the form; on success queues a job (placed where the spot is when it is done if auto_place).
  // Returns the job id, or 0 with an error message in messages().
  JobId generate();
  JobId submit(JobSpec spec, bool place, const std::string& purpose);
  void cancel();  // the running job and everything queued
  bool busy() const { return !jobs_.empty(); }
  const JobView* current() const;  // the running (or first queued) job
  const std::map<JobId, JobView>& jobs() const { return jobs_; }
  const LastJob& last() const { return last_; }
  const std::vector<Message>& messages() const { return messages_; }
  void clear_messages() { messages_.clear(); }

  // ---- placement ----
  Vec3 spot() const { return spot_; }
  bool spot_chosen() const { return spot_chosen_; }
  void set_spot(const Vec3& p, editor::EntityId on = editor::kNoEntity);
  bool pick_at(float x, float y);   // viewport pixel → spot (ray hit on ground or object)
  void arm_pick(const std::string& history_id = {});  // next viewport click chooses the spot (or places that entry)
  void disarm_pick() { picking_ = false; pick_history_.clear(); }
  bool picking() const { return picking_; }
  const std::string& picking_history() const { return pick_history_; }
  editor::ViewportReply on_viewport(const editor::ViewportEvent& ev);
  void draw_overlay(editor::OverlayDraw& d);
  // Box gizmo for the requested size: three handles (+x, +y top, +z) on the wire box at the spot, dragged in the
  // viewport (aspect lock scales all sides). Active when the model takes a bbox, "Size" is on and nothing runs.
  bool bbox_gizmo_active() const;
  int bbox_handle_hovered() const { return gizmo_hover_; }
  // World position of handle i (0 x, 1 y, 2 z) and its screen position with the last overlay camera.
  Vec3 bbox_handle(int i) const;
  std::optional<std::array<float, 2>> project(const Vec3& p) const;
  // Adds the mesh at the spot as one undo step; returns the entity (kNoEntity on failure, message shown).
  editor::EntityId place(std::shared_ptr<const Mesh> mesh, const std::string& prompt, const Vec3& spot,
                         const std::string& step_prefix = "Generate: ");

  // ---- history ----
  HistoryStore& history() { return *history_; }
  editor::EntityId history_place(const std::string& id, std::optional<Vec3> at = std::nullopt);
  JobId history_regenerate(const std::string& id);  // same seed and settings: identical result
  JobId history_variation(const std::string& id);   // same settings, new seed
  bool history_export(const std::string& id, const std::string& path);
  bool history_delete(const std::string& id);
  std::string default_export_path(const std::string& id, const std::string& ext = ".glb") const;

  // ---- latency ----
  LatencyLog& latency() { return *latency_; }
  const LatencyRecord* last_record() const { return latency_->records().empty() ? nullptr : &latency_->records().back(); }
  bool export_latency(const std::string& csv_path, const std::string& json_path);
  double frame_ms_recent() const;  // mean of the last frames
  double frame_ms_max_recent() const;
  std::string default_report_path(const std::string& ext) const;

  // ---- batch (tester regression run) ----
  // Queues one job per prompt with the current form; when all have ended, hands the CSV/JSON report to the
  // background writer; the batch is complete once it is written (a frame or more later).
  // nice: CPU priority of the inference for these jobs (0 = normal: measures generation speed; default: the
  // interactive priority, which favours the UI).
  bool run_batch(const std::vector<std::string>& prompts, const std::string& csv, const std::string& json, bool place,
                 std::optional<int> nice = std::nullopt);
  const std::optional<Batch>& batch() const { return batch_; }

  // ---- script commands (commands.cpp) ----
  void register_commands();
  std::string status_json() const;
  // Extra "ui" object in the status (the panel's automation state).
  void set_ui_status(std::function<nlohmann::json()> fn) { ui_status_ = std::move(fn); }

  editor::Host& host() { return host_; }
  const std::string& data_dir() const { return data_dir_; }

 private:
  // history_regenerate / history_variation: the entry's job again, with its seed or a new one
  JobId resubmit_history(const std::string& id, bool new_seed);
  void message(MsgLevel l, std::string text);
  void handle_event(const JobEvent& ev);
  void finish_job(const JobEvent& ev, JobView& view);
  // A Done job: every variation into the history, the first one with a surface placed when asked, one message.
  void finish_done(const JobEvent& ev, const JobView& view, const std::string& label);
  void warn_about_stats(const GenerationStats& st, const JobView& view);
  std::string keep_in_history(const JobSpec& job, const JobOutput& out);  // the entry id, "" when not kept
  void write_batch_report(Batch& b);  // to the background writer
  // The background writer's outcome, without waiting: failures become messages (or the batch's report_error), a
  // batch report written completes the batch. True while writes are outstanding.
  bool poll_writes();
  std::string file_role(const std::string& path) const;  // "History", "Latency log", ... (for messages)
  void save_settings_now();
  void default_spot();

  editor::Host& host_;
  ControllerOptions opt_;
  std::string default_model_dir_;
  std::string data_dir_;
  FormSettings form_;
  bool settings_dirty_ = false;
  double settings_changed_at_ = 0;
  ModelStatus model_;
  std::string loaded_dir_request_;

  std::unique_ptr<Worker> worker_;
  std::map<JobId, JobView> jobs_;
  LastJob last_;
  std::vector<Message> messages_;

  Vec3 spot_{0.f, 0.f, 0.f};
  bool spot_chosen_ = false;
  editor::EntityId spot_entity_ = editor::kNoEntity;
  bool picking_ = false;
  bool swallow_release_ = false;
  std::string pick_history_;
  std::optional<Vec3> hover_;
  std::array<float, 2> viewport_size_{0.f, 0.f};
  std::array<float, 16> view_proj_{};
  bool have_camera_ = false;
  int gizmo_hover_ = -1, gizmo_drag_ = -1;
  std::array<float, 2> gizmo_from_{0.f, 0.f}, gizmo_dir_{0.f, 0.f};
  std::array<float, 3> gizmo_start_{1.f, 1.f, 1.f};
  int hit_handle(float x, float y) const;

  std::shared_ptr<fileio::BackgroundWriter> writer_;  // shared with history_ and latency_
  std::unique_ptr<HistoryStore> history_;
  std::unique_ptr<LatencyLog> latency_;
  std::optional<Batch> batch_;

  double last_frame_at_ = 0;
  std::deque<double> recent_frames_;

  PromptCheckCache prompt_check_, negative_check_;
  const PromptCheck no_check_{};

  std::function<nlohmann::json()> ui_status_;
  std::mt19937_64 rng_;
  bool shut_ = false;
};

}  // namespace cubeforge::ai
