// Cube3D: model loading (files → tokenizer, CLIP, GPT with wte rebuilt from the codebook) and the token loop
// (prefill, guided choice, KV-cached decode, streaming, cancellation, timing). See include/cubeforge/cube3d.h.
#include "cubeforge/cube3d.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/cpu_ops.h"
#include "cubeforge/clip_tokenizer.h"
#include "cubeforge/error.h"
#include "gpt/dual_stream_gpt.h"
#include "gpt/sampling.h"
#include "cubeforge/shape_model.h"
#include "text/clip_text_model.h"

namespace fs = std::filesystem;

namespace cubeforge {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

const char* to_string(AttentionMode m) { return m == AttentionMode::Reference ? "reference" : "causal"; }
AttentionMode attention_mode_from_string(const std::string& s) {
  if (s == "reference") return AttentionMode::Reference;
  if (s == "causal") return AttentionMode::Causal;
  throw Error("attention mode must be 'reference' or 'causal', got '" + s + "'");
}

ModelFiles ModelFiles::from_directory(const std::string& dir, const std::string& clip_override) {
  if (!fs::is_directory(dir)) throw Error("model directory '" + dir + "' does not exist");
  ModelFiles f;
  for (const char* name : {"config.yaml", "open_model_v0.5.yaml", "open_model.yaml", "config.json"})
    if (fs::exists(fs::path(dir) / name)) {
      f.config = (fs::path(dir) / name).string();
      break;
    }
  if (f.config.empty())
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") f.config = e.path().string();
  if (f.config.empty()) throw Error("model directory '" + dir + "' has no config (config.yaml or a reference *.yaml)");
  f.gpt = (fs::path(dir) / "shape_gpt.safetensors").string();
  f.shape = (fs::path(dir) / "shape_tokenizer.safetensors").string();
  for (const auto& p : {f.gpt, f.shape})
    if (!fs::exists(p)) throw Error("model directory '" + dir + "' is missing " + fs::path(p).filename().string());
  f.clip_dir = clip_override.empty() ? (fs::path(dir) / "clip").string() : clip_override;
  if (!fs::is_directory(f.clip_dir))
    throw Error("no CLIP text model directory at '" + f.clip_dir + "' (put it in <model>/clip or pass --clip DIR)");
  const auto kw = fs::path(dir) / "known_words.txt";
  if (fs::exists(kw)) f.known_words = kw.string();
  return f;
}

ModelFiles ModelFiles::from_golden_case(const std::string& prefix) {
  ModelFiles f;
  f.config = prefix + "_config.json";
  f.gpt = prefix + "_gpt.safetensors";
  f.shape = prefix + "_shape.safetensors";
  f.clip_weights = prefix + "_clip.safetensors";
  for (const auto& p : {f.config, f.gpt, f.shape, f.clip_weights})
    if (!fs::exists(p)) throw Error("golden case '" + prefix + "': missing " + fs::path(p).filename().string());
  return f;
}

namespace {
bool is_blank(const std::string& text) {
  for (char ch : text)
    if (!std::isspace(static_cast<unsigned char>(ch))) return false;
  return true;
}
}  // namespace

void validate_request(const GenerationRequest& r, const ModelConfig& cfg) {
  if (!std::isfinite(r.guidance) || r.guidance < 0) throw Error("guidance must be a finite number ≥ 0");
  if (r.top_p && !(*r.top_p > 0.0f && *r.top_p <= 1.0f)) throw Error("top_p must be in (0, 1]");
  if (r.bbox) {
    if (!cfg.gpt.use_bbox)
      throw Error("this model (v0.1 layout) does not take a bounding box; remove the bbox or use a v0.5-layout model");
    for (float v : *r.bbox)
      if (!std::isfinite(v) || v <= 0) throw Error("bounding box sides must be finite and positive");
  }
  if (is_blank(r.prompt)) throw Error("the prompt is empty");
  if (!is_blank(r.negative_prompt) && !(r.guidance > 0))
    throw Error("a negative prompt needs guidance > 0 (it replaces the empty prompt of the unconditional branch)");
  if (r.variations < 1 || r.variations > kMaxVariations)
    throw Error("variations must be 1 to " + std::to_string(kMaxVariations) + ", got " + std::to_string(r.variations));
  if (r.variations > 1 && !r.top_p)
    throw Error("variations need top-p sampling: greedy decoding gives the same shape every time");
}

void set_cpu_threads(int n) { cpu::set_num_threads(n); }

namespace {
ShapeBackendFactory& shape_backend_factory() {
  static ShapeBackendFactory f = nullptr;
  return f;
}
}  // namespace
void register_shape_backend_factory(ShapeBackendFactory factory) { shape_backend_factory() = factory; }
namespace {
TextBackendFactory& text_backend_factory() {
  static TextBackendFactory f = nullptr;
  return f;
}
bool env_says_cpu(const char* var) {
  const char* v = std::getenv(var);
  return v && std::string(v) == "cpu";
}
}  // namespace
void register_text_backend_factory(TextBackendFactory factory) { text_backend_factory() = factory; }

namespace {
// Follows the token loop for one GPU stage: with a CUDA loop, a registered factory and no `env`=cpu, keeps or
// creates the stage (on failure stderr says "<unavailable> (<why>); <fallback>"); otherwise drops it.
template <typename Backend>
void follow_token_loop(bool cuda, std::unique_ptr<Backend> (*factory)(const Cube3D&, std::string*), const char* env,
                       std::unique_ptr<Backend>& stage, const Cube3D& model, const char* unavailable,
                       const char* fallback) {
  if (!cuda || !factory || env_says_cpu(env)) {
    stage.reset();
    return;
  }
  if (stage) return;
  std::string why = "unknown reason";
  stage = factory(model, &why);
  if (!stage) std::fprintf(stderr, "%s (%s); %s\n", unavailable, why.c_str(), fallback);
}
}  // namespace

void Cube3D::set_token_backend(std::unique_ptr<TokenBackend> backend) {
  backend_ = std::move(backend);
  // The GPU shape stage and text tower follow the CUDA token loop (one switch for front ends: enable_best_backend).
  const bool cuda = backend_ && backend_->name().rfind("cuda", 0) == 0;
  follow_token_loop(cuda, text_backend_factory(), "CUBEFORGE_TEXT_BACKEND", text_backend_, *this,
                    "GPU text encoder unavailable", "CLIP runs on the CPU");
  follow_token_loop(cuda, shape_backend_factory(), "CUBEFORGE_SHAPE_BACKEND", shape_backend_, *this,
                    "GPU shape stage unavailable", "the shape stage runs on the CPU");
}
std::string Cube3D::backend_name() const { return backend_ ? backend_->name() : "cpu"; }
void Cube3D::set_shape_backend(std::unique_ptr<ShapeBackend> backend) { shape_backend_ = std::move(backend); }
std::string Cube3D::shape_backend_name() const { return shape_backend_ ? shape_backend_->name() : "cpu"; }
void Cube3D::set_text_backend(std::unique_ptr<TextBackend> backend) { text_backend_ = std::move(backend); }
std::string Cube3D::text_backend_name() const { return text_backend_ ? text_backend_->name() : "cpu"; }

Cube3D::~Cube3D() = default;

std::unique_ptr<Cube3D> Cube3D::load(const ModelFiles& files, const std::function<void(float, const std::string&)>& progress) {
  auto report = [&](float f, const std::string& s) {
    if (progress) progress(f, s);
  };
  std::unique_ptr<Cube3D> m(new Cube3D());
  m->files_ = files;
  report(0.0f, "config");
  m->cfg_ = load_model_config(files.config);
  TextConfig tcfg = m->cfg_.text;
  if (!m->cfg_.has_text) {
    if (files.clip_dir.empty()) throw Error("no CLIP text model configured");
    tcfg = load_text_config((fs::path(files.clip_dir) / "config.json").string());
    if (tcfg.hidden_size != m->cfg_.gpt.text_model_embed_dim)
      throw Error("CLIP hidden size " + std::to_string(tcfg.hidden_size) + " does not match gpt_model.text_model_embed_dim " +
                  std::to_string(m->cfg_.gpt.text_model_embed_dim));
  }
  const std::string vocab = !files.vocab.empty() ? files.vocab : (fs::path(files.clip_dir) / "vocab.json").string();
  const std::string merges = !files.merges.empty() ? files.merges : (fs::path(files.clip_dir) / "merges.txt").string();
  if (!files.clip_dir.empty() || !files.vocab.empty()) {
    report(0.05f, "tokenizer");
    m->tokenizer_ = std::make_unique<ClipTokenizer>(ClipTokenizer::load(vocab, merges));
  }
  report(0.1f, "text model");
  const std::string clip_w =
      !files.clip_weights.empty() ? files.clip_weights : (fs::path(files.clip_dir) / "model.safetensors").string();
  m->clip_ = ClipTextModel::load(tcfg, clip_w);
  report(0.3f, "shape tokenizer");
  m->shape_ = ShapeModel::load(m->cfg_.shape, files.shape);
  const auto codebook = m->shape_->codebook();
  report(0.4f, "GPT");
  m->gpt_ = DualStreamGpt::load(m->cfg_.gpt, m->cfg_.num_tokens(), files.gpt, codebook);
  m->state_ = std::make_unique<GptState>();
  if (!files.known_words.empty()) {
    std::ifstream in(files.known_words);
    if (!in) throw Error("cannot read known-words list '" + files.known_words + "'");
    for (std::string w; std::getline(in, w);)
      if (!w.empty()) m->known_words_.insert(w);
  }
  report(1.0f, "ready");
  return m;
}

std::vector<std::string> Cube3D::unknown_words(const std::string& prompt) const {
  if (!tokenizer_ || known_words_.empty()) return {};
  return cubeforge::unknown_words(*tokenizer_, prompt, known_words_);
}

void Cube3D::encode_text(const std::vector<int64_t>& ids, const std::vector<int64_t>& mask, int B,
                         std::vector<float>& last_hidden, std::vector<float>* text_embeds, std::string* used) const {
  const int T = 77;
  if (ids.size() != size_t(B) * T || mask.size() != size_t(B) * T) throw Error("CLIP input must be [B, 77] ids and mask");
  if (used) *used = "cpu";
  if (text_backend_ && !text_embeds) {
    try {
      text_backend_->encode(ids, mask, B, last_hidden);
      if (used) *used = text_backend_->name();
      return;
    } catch (const std::exception& e) {
      // A bad request (token id, mask) fails the same way on the CPU below; a GPU fault is said and survived.
      std::fprintf(stderr, "GPU text encoder failed (%s); running CLIP on the CPU\n", e.what());
      if (used) *used = std::string("cpu (GPU failed: ") + e.what() + ")";
    }
  }
  last_hidden.assign(size_t(B) * T * clip_->hidden(), 0.0f);
  if (text_embeds) text_embeds->assign(size_t(B) * clip_->config().projection_dim, 0.0f);
  clip_->forward(ids.data(), mask.data(), B, T, last_hidden.data(), text_embeds ? text_embeds->data() : nullptr);
}

std::vector<float> Cube3D::make_cond(const std::vector<float>& last_hidden, const std::vector<float>& bbox, int B) const {
  std::vector<float> cond(size_t(B) * gpt_->cond_len() * cfg_.gpt.n_embd);
  gpt_->make_cond(last_hidden.data(), bbox.empty() ? nullptr : bbox.data(), B, cond.data());
  return cond;
}

std::vector<float> Cube3D::bos_embedding() const {
  const float* r = gpt_->wte_row(cfg_.gpt.bos_id());
  return std::vector<float>(r, r + cfg_.gpt.n_embd);
}

std::vector<int> Cube3D::run_gpt(const std::vector<float>& cond, int B, float guidance, std::optional<float> top_p,
                                 uint64_t seed, AttentionMode mode, const std::vector<int>* teacher,
                                 std::vector<std::vector<float>>* step_logits, const TokenCallback& on_token,
                                 const CancelToken* cancel, GenerationStats* stats) const {
  const auto t0 = Clock::now();
  const int N = cfg_.num_tokens(), K = cfg_.shape.num_codes, V = cfg_.gpt.vocab();
  const bool cfg_on = guidance > 0 && B == 2;
  GptState& st = *state_;
  if (st.rows != B || st.dual_k.size() != size_t(cfg_.gpt.n_layer)) gpt_->init_state(st, B);
  throw_if_cancelled(cancel);
  gpt_->prefill(st, cond.data());
  if (stats) stats->prefill_ms = ms_since(t0);
  std::vector<int> tokens;
  tokens.reserve(N);
  std::vector<float> guided(K);
  std::vector<std::pair<float, int>> scratch;
  std::vector<int> feed(B);
  for (int i = 0; i < N; ++i) {
    const float* lc = st.logits.data();
    const float* lu = cfg_on ? st.logits.data() + V : nullptr;
    guide_logits(lc, lu, K, cfg_on ? guidance : 0.0, i, N, guided.data());
    int id = top_p ? sample_top_p(guided.data(), K, *top_p, seed, i, scratch) : argmax(guided.data(), K);
    if (step_logits) {
      std::vector<float> row;
      for (int b = 0; b < B; ++b) row.insert(row.end(), st.logits.begin() + size_t(b) * V, st.logits.begin() + size_t(b) * V + K);
      row.insert(row.end(), guided.begin(), guided.end());
      step_logits->push_back(std::move(row));
    }
    if (teacher) id = (*teacher)[i];
    tokens.push_back(id);
    const double t = ms_since(t0);
    if (stats) stats->token_ms.push_back(t);
    if (on_token) on_token(TokenEvent{i, id, t});
    if (i + 1 < N) {
      throw_if_cancelled(cancel);
      for (int b = 0; b < B; ++b) feed[b] = id;  // the unconditional branch follows the guided token
      gpt_->decode(st, feed.data(), mode);
    }
  }
  if (stats) stats->gpt_ms = ms_since(t0);
  return tokens;
}

TokenResult Cube3D::generate_tokens(const GenerationRequest& req, const TokenCallback& on_token, const CancelToken* cancel) {
  if (req.variations != 1)
    throw Error("generate_tokens makes one generation; use generate_token_variations for several variations");
  return std::move(generate_token_variations(req, on_token, cancel).front());
}

std::vector<float> Cube3D::encode_request(const GenerationRequest& req, GenerationStats& stats) {
  auto enc = tokenizer_->encode(req.prompt);
  stats.prompt_truncated = enc.truncated;
  stats.unknown_words = unknown_words(req.prompt);
  const bool cfg_on = req.guidance > 0;
  const int B = cfg_on ? 2 : 1;
  std::vector<float> hidden;
  encode_text(enc.input_ids, enc.attention_mask, 1, hidden, nullptr, &stats.text_backend);
  if (cfg_on) {
    // The unconditional branch: the empty string (the reference), or the negative prompt in its place. CPU and GPU
    // encodings agree to fp32 rounding (cuda_text.h).
    const std::string text = is_blank(req.negative_prompt) ? std::string() : req.negative_prompt;
    if (uncond_hidden_.empty() || uncond_text_ != text) {
      auto enc_u = tokenizer_->encode(text);
      std::vector<float> states;  // the cache changes only once the encode succeeded
      encode_text(enc_u.input_ids, enc_u.attention_mask, 1, states);
      uncond_hidden_ = std::move(states);
      uncond_text_ = text;
      uncond_truncated_ = enc_u.truncated;
    }
    stats.negative_prompt_truncated = uncond_truncated_;
    hidden.insert(hidden.end(), uncond_hidden_.begin(), uncond_hidden_.end());
  }
  std::vector<float> bbox;
  if (cfg_.gpt.use_bbox && req.bbox) {
    std::array<float, 3> b = *req.bbox;
    if (req.normalize_bbox) {
      const float mx = std::max({b[0], b[1], b[2]});
      for (auto& v : b) v = 1.925f * v / mx;
    }
    bbox = {b[0], b[1], b[2]};
    if (cfg_on) bbox.insert(bbox.end(), {0.0f, 0.0f, 0.0f});  // uncond branch: zero bbox
  }
  return make_cond(hidden, bbox, B);
}

std::vector<TokenResult> Cube3D::generate_token_variations(const GenerationRequest& req, const TokenCallback& on_token,
                                                           const CancelToken* cancel) {
  validate_request(req, cfg_);
  if (!tokenizer_) throw Error("this model has no tokenizer (vocab.json/merges.txt); it can only run pre-tokenized inputs");
  const auto t0 = Clock::now();
  GenerationStats text;  // what every variation's stats start from
  const std::vector<float> cond = encode_request(req, text);
  const int B = req.guidance > 0 ? 2 : 1;
  text.text_ms = ms_since(t0);
  std::vector<TokenResult> out(req.variations);
  bool gpu = backend_ != nullptr;
  std::string cpu_backend = "cpu";  // after a GPU failure, it says why the rest runs on the CPU
  for (int v0 = 0; v0 < req.variations;) {
    // The next chunk: as many variations as the backend decodes together, else one on the CPU.
    GenerationRequest r = req;
    r.seed = variation_seed(req.seed, v0);
    r.variations = gpu ? std::clamp(backend_->max_variations(), 1, req.variations - v0) : 1;
    const double offset = ms_since(t0);
    TokenCallback cb;
    if (on_token)
      cb = [&, offset, v0](const TokenEvent& e) {
        on_token(TokenEvent{e.index, e.id, e.elapsed_ms + offset, e.variation + v0});
      };
    GenerationStats st = text;
    std::vector<std::vector<int>> tokens;
    if (gpu) {
      try {
        tokens = backend_->generate_variations(cond, B, r, r.variations, cb, cancel, &st);
        if (tokens.size() != size_t(r.variations))
          throw Error("it returned " + std::to_string(tokens.size()) + " token lists for " +
                      std::to_string(r.variations) + " variations");
        st.backend = backend_->name();
      } catch (const Cancelled&) {
        throw;
      } catch (const std::exception& e) {
        // A GPU failure mid-generation (out of memory, driver error): finish on the CPU and say so.
        gpu = false;
        cpu_backend = std::string("cpu (") + backend_->name() + " failed: " + e.what() + ")";
        tokens.clear();
        st = text;
      }
    }
    if (tokens.empty()) {
      r.variations = 1;
      tokens.push_back(run_gpt(cond, B, r.guidance, r.top_p, r.seed, r.attention, nullptr, nullptr, cb, cancel, &st));
      st.backend = cpu_backend;
    }
    for (auto& t : st.token_ms) t += offset;
    st.ttft_ms = st.token_ms.empty() ? 0 : st.token_ms.front();
    for (auto& t : tokens) out[v0++] = TokenResult{std::move(t), st};
  }
  return out;
}

double Cube3D::warm_up(const CancelToken* cancel) {
  if (!tokenizer_) return 0.0;
  const auto t0 = Clock::now();
  GenerationRequest req;
  req.prompt = "a chair";
  CancelToken stop;  // ours: set once two tokens have arrived (or when the caller cancels)
  std::vector<int> prefix;
  auto on_token = [&](const TokenEvent& e) {
    prefix.push_back(e.id);
    if (e.index >= 1 || (cancel && cancel->cancelled())) stop.cancel();
  };
  try {
    generate_tokens(req, on_token, &stop);
  } catch (const Cancelled&) {
  }
  if (cancel) cancel->throw_if_cancelled();
  if (!prefix.empty()) preview_mesh(prefix, 4, cancel);
  return ms_since(t0);
}

}  // namespace cubeforge
