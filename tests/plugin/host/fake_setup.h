// The AI plugin in a headless editor on the scripted backend, with a real (empty but complete-looking) model folder
// and its own config folder; restart() unloads and loads the plugin again over the same folders. Shared by the
// fake-backend host tests.
#pragma once
#include "../fake_backend.h"
#include "host_fixture.h"

#include <fstream>
#include <functional>
#include <memory>
#include <string>

namespace cubeforge::ai::testing {

// The fake backend's directories are not real folders: skip the on-disk layout check by pointing the default
// model at a real (empty but complete-looking) directory.
inline std::string make_fake_model_dir(const fs::path& root) {
  const fs::path d = root / "fake-model";
  fs::create_directories(d / "clip");
  for (const char* f : {"config.yaml", "shape_gpt.safetensors", "shape_tokenizer.safetensors"}) std::ofstream(d / f) << "x";
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) std::ofstream(d / "clip" / f) << "x";
  return d.string();
}

// FakeBackend accepts only "fake:" directories; this one maps a real directory to the fake model.
class DirFakeBackend : public FakeBackend {
 public:
  std::string real_dir;
  std::unique_ptr<LoadedModel> load(const std::string& dir, const LoadProgress& p, const CancelToken* c) override {
    return FakeBackend::load(dir == real_dir ? "fake:" + dir : dir, p, c);
  }
};

struct FakeSetup {
  ScopedConfigDir cfg;
  std::shared_ptr<DirFakeBackend> be = std::make_shared<DirFakeBackend>();
  fileio::FaultHook write_hook;  // the plugin's background writer's hook
  std::unique_ptr<Editor> ed;
  explicit FakeSetup(const std::string& tag, const std::function<void(FakeScript&)>& script = {},
                     fileio::FaultHook hook = {})
      : cfg(tag), write_hook(std::move(hook)) {
    be->real_dir = make_fake_model_dir(cfg.dir);
    if (script) script(be->script);
    start();
  }
  void restart() {
    ed.reset();
    start();
  }

 private:
  void start() {
    ControllerOptions o;
    o.backend = be;
    o.default_model_dir = be->real_dir;
    o.write_hook = write_hook;
    ed = std::make_unique<Editor>(o);
    EXPECT_TRUE(ed->wait_model());
  }
};

}  // namespace cubeforge::ai::testing
