// The AI worker thread: queue, per-job state machine, model ownership, mailbox, and the per-variation finishing of a
// job's shapes (decimate, base-centre, fit, history hook). See worker.h for the contract.
#include "worker/worker.h"

#include "placement/placement.h"

#include <cubeforge/error.h>
#include <cubeforge/mesh_cleanup.h>
#include <cubeforge/mesh_io.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

namespace cubeforge::ai {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

const char* to_string(JobState s) {
  switch (s) {
    case JobState::Queued: return "queued";
    case JobState::Loading: return "loading";
    case JobState::Generating: return "generating";
    case JobState::Meshing: return "meshing";
    case JobState::Done: return "done";
    case JobState::Cancelled: return "cancelled";
    case JobState::Failed: return "failed";
  }
  return "?";
}

const char* to_string(ModelStatus::State s) {
  switch (s) {
    case ModelStatus::State::None: return "none";
    case ModelStatus::State::Loading: return "loading";
    case ModelStatus::State::Ready: return "ready";
    case ModelStatus::State::Failed: return "failed";
  }
  return "?";
}

Worker::Worker(std::shared_ptr<ModelBackend> backend, WorkerOptions options)
    : backend_(std::move(backend)), opt_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() { shutdown(); }

void Worker::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (running_cancel_) running_cancel_->cancel();
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Worker::load_model(const std::string& dir) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    if (running_is_load_ && running_cancel_) running_cancel_->cancel();
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [](const Item& i) { return i.kind == Item::Kind::Load; }),
                 queue_.end());
    Item it;
    it.kind = Item::Kind::Load;
    it.dir = dir;
    it.cancel = std::make_shared<CancelToken>();
    queue_.push_front(std::move(it));
  }
  cv_.notify_one();
}

JobId Worker::submit(JobSpec spec) {
  JobEvent ev;
  {
    std::lock_guard lock(mu_);
    Item it;
    it.kind = Item::Kind::Job;
    it.id = next_id_++;
    it.spec = std::make_shared<JobSpec>(std::move(spec));
    it.cancel = std::make_shared<CancelToken>();
    it.submit_time = now_ms();
    ev.job = it.id;
    ev.state = JobState::Queued;
    ev.spec = it.spec;
    if (stopping_) {
      ev.state = JobState::Cancelled;
      ev.message = "the worker is shutting down";
    } else {
      queue_.push_back(it);
    }
    mail_.events.push_back(ev);
  }
  cv_.notify_one();
  maybe_wake(true);
  return ev.job;
}

bool Worker::cancel(JobId id) {
  bool found = false;
  {
    std::lock_guard lock(mu_);
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->kind == Item::Kind::Job && it->id == id) {
        JobEvent ev;
        ev.job = id;
        ev.state = JobState::Cancelled;
        ev.message = "cancelled before it started";
        ev.spec = it->spec;
        mail_.events.push_back(std::move(ev));
        queue_.erase(it);
        found = true;
        break;
      }
    }
    if (!found && running_ == id && running_cancel_) {
      running_cancel_->cancel();
      found = true;
    }
  }
  if (found) maybe_wake(true);
  return found;
}

void Worker::cancel_all() {
  std::vector<Item> dropped;
  {
    std::lock_guard lock(mu_);
    for (auto& it : queue_)
      if (it.kind == Item::Kind::Job) dropped.push_back(it);
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [](const Item& i) { return i.kind == Item::Kind::Job; }),
                 queue_.end());
    for (auto& it : dropped) {
      JobEvent ev;
      ev.job = it.id;
      ev.state = JobState::Cancelled;
      ev.message = "cancelled before it started";
      ev.spec = it.spec;
      mail_.events.push_back(std::move(ev));
    }
    if (running_ && running_cancel_) running_cancel_->cancel();
  }
  maybe_wake(true);
}

Mail Worker::poll() {
  std::lock_guard lock(mu_);
  Mail out = std::move(mail_);
  mail_ = Mail{};
  return out;
}

ModelStatus Worker::model_status() const {
  std::lock_guard lock(mu_);
  return model_status_;
}

std::size_t Worker::queued() const {
  std::lock_guard lock(mu_);
  return std::size_t(std::count_if(queue_.begin(), queue_.end(), [](const Item& i) { return i.kind == Item::Kind::Job; }));
}

JobId Worker::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

void Worker::maybe_wake(bool force) {
  if (!opt_.wake) return;
  const double t = now_ms();
  {
    std::lock_guard lock(mu_);
    if (!force && t - last_wake_ < opt_.wake_interval_ms) return;
    last_wake_ = t;
  }
  opt_.wake();
}

void Worker::post_event(JobEvent ev) {
  {
    std::lock_guard lock(mu_);
    mail_.events.push_back(std::move(ev));
  }
  maybe_wake(true);
}

void Worker::post_progress(const JobProgress& p, bool force_wake) {
  {
    std::lock_guard lock(mu_);
    mail_.progress = p;
  }
  maybe_wake(force_wake);
}

void Worker::post_preview(PreviewUpdate p) {
  {
    std::lock_guard lock(mu_);
    mail_.preview = std::move(p);
    mail_.previews++;
  }
  maybe_wake(true);
}

void Worker::set_model_status(const ModelStatus& st, bool force_wake) {
  {
    std::lock_guard lock(mu_);
    model_status_ = st;
    mail_.model = st;
  }
  maybe_wake(force_wake);
}

void Worker::fault(const char* point, JobId job) {
  if (opt_.fault) opt_.fault(point, job);
}

void Worker::apply_nice(int nice) {
  // Per-thread nice on Linux, for this thread and every thread of its OpenMP team (the team that runs the
  // inference's parallel loops). Lowering the priority needs no privileges; raising it back may fail (harmless).
  auto set = [nice] { (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), nice); };
  set();
#pragma omp parallel
  set();
  current_nice_ = nice;
}

void Worker::run() {
  set_cpu_threads(opt_.cpu_threads);
  apply_nice(opt_.nice);
  for (;;) {
    Item it;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      it = std::move(queue_.front());
      queue_.pop_front();
      running_ = it.kind == Item::Kind::Job ? it.id : 0;
      running_cancel_ = it.cancel;
      running_is_load_ = it.kind == Item::Kind::Load;
    }
    if (it.kind == Item::Kind::Load)
      run_load(it);
    else
      run_job(it);
    {
      std::lock_guard lock(mu_);
      running_ = 0;
      running_cancel_.reset();
      running_is_load_ = false;
    }
  }
  model_.reset();
}

void Worker::ensure_model(const std::string& dir, const CancelToken* cancel, JobId job,
                          const std::shared_ptr<JobSpec>& spec, double t0) {
  if (model_ && model_dir_ == dir) return;
  model_.reset();  // free the old model before loading the next one
  model_dir_.clear();
  ModelStatus st;
  st.state = ModelStatus::State::Loading;
  st.dir = dir;
  st.stage = "starting";
  set_model_status(st, true);
  const double tl = now_ms();
  try {
    fault("load", job);
    auto progress = [&](float f, const std::string& stage) {
      st.fraction = f;
      st.stage = stage;
      set_model_status(st, false);
      if (job) {
        JobProgress p;
        p.job = job;
        p.state = JobState::Loading;
        p.stage = "model: " + stage;
        p.load_fraction = f;
        p.elapsed_ms = now_ms() - t0;
        post_progress(p, false);
      }
    };
    model_ = backend_->load(dir, progress, cancel);
    if (!model_) throw Error("the model backend returned no model for '" + dir + "'");
    model_dir_ = dir;
  } catch (const Cancelled&) {
    model_.reset();
    ModelStatus none;
    none.dir = dir;
    none.stage = "load cancelled";
    set_model_status(none, true);
    throw;
  } catch (const std::exception& e) {
    model_.reset();
    ModelStatus bad;
    bad.state = ModelStatus::State::Failed;
    bad.dir = dir;
    bad.error = e.what();
    set_model_status(bad, true);
    throw;
  }
  (void)spec;
  ModelStatus ready;
  ready.state = ModelStatus::State::Ready;
  ready.dir = dir;
  ready.fraction = 1.f;
  ready.stage = "ready";
  ready.info = model_->info();
  ready.load_ms = now_ms() - tl;
  set_model_status(ready, true);
}

void Worker::run_load(const Item& it) {
  try {
    ensure_model(it.dir, it.cancel.get(), 0, nullptr, now_ms());
  } catch (...) {
    // Reported through the model status.
  }
}

namespace {

// One variation's shape → a result ready to place: decimated to the face cap, base-centred, scaled to fit the bbox,
// painted with the spec's vertex colour.
std::shared_ptr<JobOutput> make_output(ShapeResult& r, const JobSpec& spec, int variation, const CancelToken* cancel,
                                       int threads) {
  auto out = std::make_shared<JobOutput>();
  out->variation = variation;
  out->seed = variation_seed(spec.request.seed, variation);
  out->faces_before_cap = r.mesh.face_count();
  const double td = now_ms();
  if (spec.face_cap > 0 && r.mesh.face_count() > spec.face_cap) {
    DecimateOptions d;
    d.max_faces = spec.face_cap;
    d.threads = threads;
    decimate_mesh(r.mesh, d);
  }
  // The library's clean-up left the normals out (JobSpec's mesh options): computed here once, on the final faces,
  // instead of on the full mesh and again after the decimation.
  if (r.mesh.normals.size() != r.mesh.positions.size()) compute_vertex_normals(r.mesh);
  throw_if_cancelled(cancel);
  const Bounds b = mesh_bounds(r.mesh);
  out->fit_scale = fit_scale(b.size(), spec.request.bbox);
  base_centre_and_scale(r.mesh, out->fit_scale);
  if (spec.vertex_colour) r.mesh.colors.assign(r.mesh.positions.size(), *spec.vertex_colour);
  out->decimate_ms = now_ms() - td;
  out->mesh = std::make_shared<const Mesh>(std::move(r.mesh));
  out->tokens = std::move(r.tokens);
  out->stats = std::move(r.stats);
  return out;
}

}  // namespace

TokenCounter::TokenCounter(int variations) : ms_(std::size_t(std::max(1, variations))) {}

void TokenCounter::add(const TokenEvent& e) {
  const std::size_t v = std::min<std::size_t>(std::size_t(std::max(0, e.variation)), ms_.size() - 1);
  // Index 0 again: the library restarted this variation (and every later one) on the CPU after a GPU failure.
  if (e.index == 0)
    for (std::size_t w = v; w < ms_.size(); ++w) ms_[w].clear();
  ms_[v].push_back(e.elapsed_ms);
}

int TokenCounter::tokens() const {
  std::size_t n = 0;
  for (const auto& m : ms_) n += m.size();
  return int(n);
}

int TokenCounter::decoding(int per_shape) const {
  return int(std::count_if(ms_.begin(), ms_.end(), [&](const auto& m) { return !m.empty() && int(m.size()) < per_shape; }));
}

std::vector<double> TokenCounter::token_ms() const {
  std::vector<double> all;
  for (const auto& m : ms_) all.insert(all.end(), m.begin(), m.end());
  std::sort(all.begin(), all.end());
  return all;
}

void Worker::run_job(const Item& it) {
  const JobId id = it.id;
  const double t0 = now_ms();
  const CancelToken* cancel = it.cancel.get();
  auto spec = it.spec;
  JobState state = JobState::Loading;
  const int variations = std::max(1, spec->request.variations);
  auto partial = std::make_shared<GenerationStats>();
  auto event = [&](JobState s, std::string msg = {}) {
    state = s;
    JobEvent ev;
    ev.job = id;
    ev.state = s;
    ev.message = std::move(msg);
    ev.spec = spec;
    return ev;
  };
  JobProgress prog;
  prog.job = id;
  prog.variations = variations;
  TokenCounter counter(variations);
  int after_cancel = 0;  // tokens that arrived once the cancel was requested (JobEvent::tokens_after_cancel)
  if (spec->nice.value_or(opt_.nice) != current_nice_) apply_nice(spec->nice.value_or(opt_.nice));
  try {
    post_event(event(JobState::Loading));
    fault("start", id);
    throw_if_cancelled(cancel);
    const double tl = now_ms();
    const bool had_model = model_ && model_dir_ == spec->model_dir;
    ensure_model(spec->model_dir, cancel, id, spec, t0);
    const double load_ms = had_model ? 0.0 : now_ms() - tl;
    throw_if_cancelled(cancel);

    auto info = model_->info();
    post_event(event(JobState::Generating));
    prog.state = JobState::Generating;
    prog.stage = "text";
    prog.tokens_total = (info ? info->num_tokens : 0) * variations;
    prog.elapsed_ms = now_ms() - t0;
    post_progress(prog, true);

    JobSpec run_spec = *spec;
    run_spec.mesh.base_pivot = true;
    run_spec.mesh.normals = false;  // make_output computes them once, after the decimation
    double first_token_at = -1;
    auto on_token = [&](const TokenEvent& e) {
      if (cancel && cancel->cancelled()) ++after_cancel;
      counter.add(e);
      if (counter.tokens() == 1) partial->ttft_ms = e.elapsed_ms;
      fault("token", id);
      const double t = now_ms();
      if (first_token_at < 0) first_token_at = t;
      prog.stage = "gpt";
      prog.tokens_done = counter.tokens();
      prog.variation = e.variation;
      prog.variations_decoding = counter.decoding(info ? info->num_tokens : 0);
      prog.elapsed_ms = t - t0;
      const double span = t - first_token_at;
      if (prog.tokens_done > 1 && span > 0) {
        prog.tokens_per_s = (prog.tokens_done - 1) * 1000.0 / span;
        prog.eta_ms = prog.tokens_total > prog.tokens_done ? (prog.tokens_total - prog.tokens_done) * 1000.0 / prog.tokens_per_s : 0;
      }
      post_progress(prog, false);
    };
    auto on_preview = [&](int tokens_done, const Mesh& m) {
      fault("preview", id);
      PreviewUpdate p;
      p.job = id;
      p.tokens_done = tokens_done;
      p.at_ms = now_ms() - t0;
      p.mesh = std::make_shared<const Mesh>(m);
      post_preview(std::move(p));
    };
    int meshed = 0;  // "latents" stages seen: the variation being meshed (they are meshed one after the other)
    auto on_stage = [&](const std::string& s) {
      if (s == "gpt" || s == "text") return;
      if (state == JobState::Generating) {
        post_event(event(JobState::Meshing));
        prog.state = JobState::Meshing;
        prog.variations_decoding = 0;
      }
      if (s == "latents") prog.variation = std::min(meshed++, variations - 1);
      prog.stage = s;
      prog.elapsed_ms = now_ms() - t0;
      post_progress(prog, true);
      fault("meshing", id);
    };
    std::vector<ShapeResult> results = model_->generate(run_spec, on_token, on_preview, cancel, on_stage);
    throw_if_cancelled(cancel);
    if (int(results.size()) != variations)
      throw Error("the model returned " + std::to_string(results.size()) + " shapes for " + std::to_string(variations) +
                  " variations");
    if (state == JobState::Generating) {  // a backend that reports no mesh stages
      post_event(event(JobState::Meshing));
      prog.state = JobState::Meshing;
      fault("meshing", id);
    }

    prog.stage = "decimate";
    prog.variation = 0;
    post_progress(prog, true);
    fault("decimate", id);
    // The variations are finished (decimated, fitted, painted) in parallel, each decimation on its share of the
    // cores; variation 0 on this thread. The futures are declared after `results`: an exception (cancel) waits for
    // the others before `results` goes away.
    const int share = std::max(1, int(std::thread::hardware_concurrency()) / variations);
    std::vector<std::future<std::shared_ptr<JobOutput>>> others;
    for (int v = 1; v < variations; ++v)
      others.push_back(std::async(std::launch::async, [&, v] {
        return make_output(results[std::size_t(v)], *spec, v, cancel, share);
      }));
    std::vector<std::shared_ptr<JobOutput>> outs{make_output(results[0], *spec, 0, cancel, share)};
    for (auto& f : others) outs.push_back(f.get());
    fault("finish", id);
    throw_if_cancelled(cancel);
    const double wall_ms = now_ms() - t0;  // every result is ready; saving them to the history is not counted
    for (auto& out : outs) {
      out->queue_ms = t0 - it.submit_time;
      out->load_ms = load_ms;
      out->wall_ms = wall_ms;
    }
    if (opt_.finish) {
      prog.stage = "saving";
      post_progress(prog, true);
      for (auto& out : outs) run_finish(*spec, *out);
    }
    JobEvent done = event(JobState::Done);
    done.outputs.assign(outs.begin(), outs.end());
    done.output = done.outputs.front();
    post_event(std::move(done));
  } catch (const Cancelled&) {
    partial->token_ms = counter.token_ms();
    JobEvent ev = event(JobState::Cancelled, "cancelled");
    ev.partial = partial;
    ev.tokens_after_cancel = after_cancel;
    post_event(std::move(ev));
  } catch (const std::exception& e) {
    partial->token_ms = counter.token_ms();
    JobEvent ev = event(JobState::Failed, e.what());
    ev.partial = partial;
    post_event(std::move(ev));
  } catch (...) {
    partial->token_ms = counter.token_ms();
    JobEvent ev = event(JobState::Failed, "unknown error in the worker");
    ev.partial = partial;
    post_event(std::move(ev));
  }
}

void Worker::run_finish(const JobSpec& spec, JobOutput& out) {
  try {
    opt_.finish(spec, out);
  } catch (const std::exception& e) {
    out.save_error = e.what();
  }
}

}  // namespace cubeforge::ai
