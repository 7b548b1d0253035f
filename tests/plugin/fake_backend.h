// A scripted ModelBackend for the AI plugin tests: configurable token count and delays, gates that hold the job
// in a chosen stage until the test releases it (while still honouring cancel, like the real model), and failures
// injected at any stage. Deterministic tokens: id = (seed * 31 + i * 7) % 1000. Variations behave like the
// library's: variation v is the single generation of seed + v (its own tokens and box depth), more than one needs
// top-p, and they decode one after the other (the CPU) or step by step together (batch_variations: a GPU batch).
#pragma once
#include "worker/backend.h"

#include <cubeforge/error.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace cubeforge::ai::testing {

// A closed box mesh with n x n quads per face (12 n^2 triangles), centred at the origin, side 2.
inline Mesh box_mesh(int n = 1, float sx = 1.f, float sy = 1.f, float sz = 1.f) {
  Mesh m;
  auto face = [&](int axis, float sign) {
    const uint32_t base = uint32_t(m.positions.size());
    const int u = (axis + 1) % 3, v = (axis + 2) % 3;
    for (int j = 0; j <= n; ++j)
      for (int i = 0; i <= n; ++i) {
        Vec3 p{};
        p[axis] = sign;
        p[u] = -1.f + 2.f * float(i) / float(n);
        p[v] = -1.f + 2.f * float(j) / float(n);
        p = {p[0] * sx, p[1] * sy, p[2] * sz};
        m.positions.push_back(p);
        Vec3 nn{0, 0, 0};
        nn[axis] = sign;
        m.normals.push_back(nn);
      }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        uint32_t a = base + uint32_t(j * (n + 1) + i), b = a + 1, c = a + uint32_t(n + 1), d = c + 1;
        if (sign > 0) {
          m.triangles.push_back({a, b, d});
          m.triangles.push_back({a, d, c});
        } else {
          m.triangles.push_back({a, d, b});
          m.triangles.push_back({a, c, d});
        }
      }
  };
  for (int axis = 0; axis < 3; ++axis) {
    face(axis, 1.f);
    face(axis, -1.f);
  }
  return m;
}

struct FakeScript {
  int tokens = 64;
  double load_ms = 0;          // total load time (slept in slices, cancel polled)
  double token_ms = 0.2;       // per token
  double stage_ms = 1;         // per mesh stage
  int mesh_subdiv = 1;         // box_mesh(n): 12 n^2 faces
  bool empty_mesh = false;
  bool use_bbox = false;
  std::vector<std::string> known_words;
  std::string fail_at;         // "load", "text", "token:K", "preview", "latents", "occupancy", "meshing", "cleanup"
  std::string gate_at;         // hold here until release(): "load", "token:K", "occupancy"
                               // (token points of variation v > 0: "token:K@v")
  bool batch_variations = false;  // decode the variations together, one step of each at a time (a GPU batch)
};

// The fake's shape for a seed: a 1 x 2 x d box whose depth d steps with the seed (d = 0.5 at seed 7, the tests'
// default), so neighbouring seeds (variations) give distinct meshes.
inline Mesh fake_shape(std::uint64_t seed, int subdiv) {
  return box_mesh(subdiv, 0.5f, 1.0f, 0.25f * (1.f + 0.125f * float((seed + 1) % 8)));
}

class FakeBackend : public ModelBackend {
 public:
  FakeScript script;
  std::atomic<int> loads{0};
  std::atomic<int> tokens_emitted{0};
  std::atomic<bool> at_gate{false};

  void release() {
    std::lock_guard l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  void rearm() {
    std::lock_guard l(mu_);
    released_ = false;
    at_gate = false;
  }
  // Blocks (polling cancel like the real model does between steps) while the gate is closed.
  void gate(const std::string& point, const CancelToken* cancel) {
    if (script.gate_at != point) return;
    at_gate = true;
    std::unique_lock l(mu_);
    while (!released_) {
      cv_.wait_for(l, std::chrono::milliseconds(1));
      if (cancel && cancel->cancelled()) {
        at_gate = false;
        throw Cancelled();
      }
    }
    at_gate = false;
  }
  static void nap(double ms, const CancelToken* cancel) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(int64_t(ms * 1000));
    while (std::chrono::steady_clock::now() < end) {
      throw_if_cancelled(cancel);
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(200, int64_t(ms * 1000) + 1)));
    }
  }

  std::unique_ptr<LoadedModel> load(const std::string& dir, const LoadProgress& progress, const CancelToken* cancel) override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

class FakeModel : public LoadedModel {
 public:
  FakeModel(FakeBackend& b, std::shared_ptr<const ModelInfo> info) : b_(b), info_(std::move(info)) {}
  std::shared_ptr<const ModelInfo> info() const override { return info_; }
  std::vector<ShapeResult> generate(const JobSpec& spec, const TokenCallback& on_token, const PreviewCallback& on_preview,
                                    const CancelToken* cancel, const StageCallback& on_stage) override {
    const auto& s = b_.script;
    t0_ = std::chrono::steady_clock::now();
    if (spec.request.prompt.find_first_not_of(" \t\n") == std::string::npos) throw Error("the prompt is empty");
    const int n = spec.request.variations;
    if (n < 1 || n > kMaxVariations) throw Error("variations must be 1 to 8, got " + std::to_string(n));
    if (n > 1 && !spec.request.top_p) throw Error("variations need top-p sampling: greedy decoding gives the same shape");
    std::vector<ShapeResult> out(std::size_t(n), ShapeResult{});
    if (s.fail_at == "text") throw Error("injected failure in text");
    if (on_stage) on_stage("gpt");
    // Previews follow the first variation still decoding.
    if (s.batch_variations) {
      for (int i = 0; i < s.tokens; ++i)
        for (int v = 0; v < n; ++v)
          token(spec, v, i, out[std::size_t(v)], on_token, v == 0 ? on_preview : PreviewCallback{}, cancel);
    } else {
      for (int v = 0; v < n; ++v)
        for (int i = 0; i < s.tokens; ++i) token(spec, v, i, out[std::size_t(v)], on_token, on_preview, cancel);
    }
    for (int v = 0; v < n; ++v) {
      out[std::size_t(v)].stats.gpt_ms = ms();
      shape(spec.request.seed + std::uint64_t(v), out[std::size_t(v)], cancel, on_stage);
    }
    return out;
  }

 private:
  double ms() const { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count(); }
  // Token i of variation v (sampled with seed + v), then a preview when one is due.
  void token(const JobSpec& spec, int v, int i, ShapeResult& r, const TokenCallback& on_token,
             const PreviewCallback& on_preview, const CancelToken* cancel) {
    const auto& s = b_.script;
    const std::string point = "token:" + std::to_string(i) + (v > 0 ? "@" + std::to_string(v) : "");
    throw_if_cancelled(cancel);
    b_.gate(point, cancel);
    FakeBackend::nap(s.token_ms, nullptr);  // one step is not interruptible, like a real decode step
    if (s.fail_at == point) throw Error("injected failure at token " + std::to_string(i));
    const int id = int(((spec.request.seed + std::uint64_t(v)) * 31 + uint64_t(i) * 7) % 1000);
    r.tokens.push_back(id);
    r.stats.token_ms.push_back(ms());
    if (i == 0) r.stats.ttft_ms = ms();
    b_.tokens_emitted++;
    if (on_token) on_token(TokenEvent{i, id, ms(), v});
    const int k = i + 1;
    if (on_preview && spec.preview.every > 0 && k % spec.preview.every == 0 && k < s.tokens) {
      if (s.fail_at == "preview") throw Error("injected failure in preview");
      const float f = 0.3f + 0.7f * float(k) / float(s.tokens);
      r.stats.previews++;
      if (r.stats.first_preview_ms == 0) r.stats.first_preview_ms = ms();
      on_preview(k, box_mesh(1, f, f, f));
    }
  }
  // Tokens → mesh of one variation: the four mesh stages (gates and failures), then its box.
  void shape(std::uint64_t seed, ShapeResult& r, const CancelToken* cancel, const StageCallback& on_stage) {
    const auto& s = b_.script;
    for (const char* st : {"latents", "occupancy", "meshing", "cleanup"}) {
      throw_if_cancelled(cancel);
      if (on_stage) on_stage(st);
      b_.gate(st, cancel);
      FakeBackend::nap(s.stage_ms, cancel);
      if (s.fail_at == st) throw Error(std::string("injected failure in ") + st);
    }
    if (!s.empty_mesh) r.mesh = fake_shape(seed, s.mesh_subdiv);
    r.stats.total_ms = ms();
  }

  FakeBackend& b_;
  std::shared_ptr<const ModelInfo> info_;
  std::chrono::steady_clock::time_point t0_;
};

inline std::unique_ptr<LoadedModel> FakeBackend::load(const std::string& dir, const LoadProgress& progress,
                                                      const CancelToken* cancel) {
  loads++;
  if (dir.rfind("fake:", 0) != 0) throw Error("model directory '" + dir + "' does not exist");
  const char* stages[] = {"config", "tokenizer", "text model", "shape tokenizer", "GPT"};
  for (int i = 0; i < 5; ++i) {
    throw_if_cancelled(cancel);
    if (progress) progress(float(i) / 5.f, stages[i]);
    nap(script.load_ms / 5, cancel);
  }
  gate("load", cancel);
  if (script.fail_at == "load") throw Error("injected failure while loading: shape_gpt.safetensors is corrupt");
  if (progress) progress(1.f, "ready");
  auto info = std::make_shared<ModelInfo>();
  info->dir = dir;
  info->name = dir.substr(5);
  info->backend = "fake";
  info->num_tokens = script.tokens;
  info->use_bbox = script.use_bbox;
  info->known_words = script.known_words;
  info->known_set.insert(script.known_words.begin(), script.known_words.end());
  return std::make_unique<FakeModel>(*this, std::move(info));
}

}  // namespace cubeforge::ai::testing
