// The AI worker: one inference thread that owns the loaded model and runs a queue of generation jobs, each a state
// machine (job.h). No GL, no ImGui, no editor types: unit-testable on its own.
//
// Threads. Every public method is for the UI thread and returns at once: it takes one short lock (never held while
// the model runs) and never joins or waits on the worker, except shutdown()/~Worker. The worker publishes into a
// mailbox: state changes are queued in order (never lost), progress and previews are latest-wins (a slow UI frame
// skips stale ones). The UI drains it with poll() once per frame; wake() asks the UI for that frame.
//
// Cancel. cancel(id) of a queued job removes it and reports Cancelled immediately; of the running job it sets the
// job's stop flag, which the model polls before every token step (and between load stages and mesh stages).
#pragma once
#include "worker/backend.h"
#include "worker/job.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace cubeforge::ai {

struct ModelStatus {
  enum class State { None, Loading, Ready, Failed };
  State state = State::None;
  std::string dir;
  float fraction = 0.f;
  std::string stage;
  std::string error;
  std::shared_ptr<const ModelInfo> info;  // when Ready
  double load_ms = 0;
};
const char* to_string(ModelStatus::State s);

// What one poll() hands over.
struct Mail {
  std::vector<JobEvent> events;          // in order
  std::optional<JobProgress> progress;   // newest
  std::optional<PreviewUpdate> preview;  // newest
  int previews = 0;                      // previews published since the last poll (some may have been skipped)
  std::optional<ModelStatus> model;      // newest, when it changed
  bool empty() const { return events.empty() && !progress && !preview && !model; }
};

// Tokens of one job per variation (worker thread): progress over every variation whether a GPU decodes them together
// or the CPU one after the other, and the partial statistics of a job that stops early.
class TokenCounter {
 public:
  explicit TokenCounter(int variations);
  void add(const TokenEvent& e);          // index 0 of variation v restarts v and every later one (GPU → CPU fallback)
  int tokens() const;                     // over every variation
  int decoding(int per_shape) const;      // variations started and not finished
  std::vector<double> token_ms() const;   // every variation's token times, in time order

 private:
  std::vector<std::vector<double>> ms_;
};

struct WorkerOptions {
  std::function<void()> wake;            // any thread: ask the UI for a frame soon (Host::request_redraw)
  double wake_interval_ms = 15;          // progress/preview wakes are throttled to this; state changes always wake
  // Linux nice value of the worker thread and its OpenMP team while a job runs (per job: JobSpec::nice). Positive
  // values let the UI thread win the CPU (interactive use); batch runs use 0 to measure generation speed.
  int nice = 10;
  int cpu_threads = 0;                   // OpenMP threads for inference; 0 = every core
  // Called on the worker thread with each final result (once per variation, with the job's spec) before Done is
  // posted (e.g. write it to the history and render its thumbnail off the UI thread). Exceptions are caught and
  // stored in that output's JobOutput::save_error.
  std::function<void(const JobSpec& spec, JobOutput& out)> finish;
  // Test seam, called on the worker thread at named points: "load", "start", "token", "preview", "meshing",
  // "decimate", "finish". Throwing there injects a failure at that point.
  std::function<void(const std::string& point, JobId job)> fault;
};

class Worker {
 public:
  explicit Worker(std::shared_ptr<ModelBackend> backend, WorkerOptions options = {});
  ~Worker();  // shutdown()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Loads a model in the background (the start-up preload, or a model switch). A running preload is cancelled.
  void load_model(const std::string& dir);
  // Queues a job; its Queued event is in the next poll().
  JobId submit(JobSpec spec);
  // True when the job was queued or running (it will end Cancelled, or Done/Failed if it was already finishing).
  bool cancel(JobId id);
  void cancel_all();
  Mail poll();

  // Snapshots (UI thread, cheap).
  ModelStatus model_status() const;
  std::size_t queued() const;
  JobId running() const;  // 0 when none
  bool idle() const { return queued() == 0 && running() == 0; }

  // Cancels everything and joins the thread (editor shutdown).
  void shutdown();

 private:
  struct Item {
    enum class Kind { Load, Job } kind = Kind::Job;
    JobId id = 0;
    std::string dir;
    std::shared_ptr<JobSpec> spec;
    std::shared_ptr<CancelToken> cancel;
    double submit_time = 0;
  };
  void run();
  void run_load(const Item& it);
  void run_job(const Item& it);
  void run_finish(const JobSpec& spec, JobOutput& out);  // opt_.finish, its exception kept in out.save_error
  // Makes dir the loaded model; reports through the model status (and the job when job != 0).
  void ensure_model(const std::string& dir, const CancelToken* cancel, JobId job, const std::shared_ptr<JobSpec>& spec,
                    double t0);
  void post_event(JobEvent ev);
  void post_progress(const JobProgress& p, bool force_wake);
  void post_preview(PreviewUpdate p);
  void set_model_status(const ModelStatus& st, bool force_wake);
  void fault(const char* point, JobId job);
  void maybe_wake(bool force);
  void apply_nice(int nice);  // worker thread

  std::shared_ptr<ModelBackend> backend_;
  WorkerOptions opt_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  JobId next_id_ = 1;
  JobId running_ = 0;
  std::shared_ptr<CancelToken> running_cancel_;  // the running job's or preload's stop flag
  bool running_is_load_ = false;
  Mail mail_;
  ModelStatus model_status_;
  double last_wake_ = -1e9;

  // Worker-thread only.
  std::unique_ptr<LoadedModel> model_;
  std::string model_dir_;
  int current_nice_ = 0;

  std::thread thread_;
};

double now_ms();  // steady clock, ms

}  // namespace cubeforge::ai
