// The ImGui panel driven headlessly (an ImGui context without a renderer; draw data is built and dropped): it draws
// in every state, scripted typing goes through the real prompt widget and Ctrl+Enter generates, Esc cancels, and
// the controls are disabled while a job runs.
#include "fake_setup.h"

#include <imgui.h>

using namespace cubeforge;
using namespace cubeforge::ai;
using namespace cubeforge::ai::testing;

namespace {

struct ImGuiHarness {
  ImGuiContext* ctx;
  ImGuiHarness() {
    ctx = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1280, 800);
    io.IniFilename = nullptr;
    unsigned char* px;
    int w, h;
    io.Fonts->GetTexDataAsRGBA32(&px, &w, &h);
    io.KeyMap[ImGuiKey_Enter] = 257;   // GLFW key codes, as the editor's backend maps them
    io.KeyMap[ImGuiKey_Escape] = 256;
    io.KeyMap[ImGuiKey_Tab] = 258;
    io.KeyMap[ImGuiKey_Backspace] = 259;
  }
  ~ImGuiHarness() { ImGui::DestroyContext(ctx); }
};

struct PanelSetup {
  ScopedConfigDir cfg;
  std::shared_ptr<DirFakeBackend> be = std::make_shared<DirFakeBackend>();
  ImGuiHarness gui;
  std::unique_ptr<Editor> ed;
  explicit PanelSetup(const std::string& tag) : cfg(tag) {
    be->real_dir = make_fake_model_dir(cfg.dir);
    be->script.use_bbox = true;
    ControllerOptions o;
    o.backend = be;
    o.default_model_dir = be->real_dir;
    ed = std::make_unique<Editor>(o, gui.ctx);
  }
  // One editor frame: plugin tasks + on_frame, then the panel inside a window, as the editor does it.
  void frame(float dt = 1.f / 60.f) {
    ImGuiIO& io = ImGui::GetIO();
    io.DeltaTime = dt;
    ed->host.frame();
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(900, 20));
    ImGui::SetNextWindowSize(ImVec2(330, 760));
    ImGui::Begin("Plugins###sidebar");
    ASSERT_EQ(ed->host.panels().size(), 1u);
    EXPECT_EQ(ed->host.panels()[0].title, "AI");
    ed->host.draw_panel(ed->host.panels()[0]);
    ImGui::End();
    ImGui::Render();
    ASSERT_TRUE(ed->host.is_active("ai")) << "the panel threw and the plugin was disabled";
  }
  bool frames_until(const std::function<bool()>& cond, double timeout_s = 20) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
    while (std::chrono::steady_clock::now() < end) {
      frame();
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return cond();
  }
};

}  // namespace

TEST(AiPanel, DrawsInEveryState) {
  PanelSetup s("panel_states");
  s.be->script.gate_at = "token:30";
  ASSERT_TRUE(s.frames_until([&] { return s.ed->status()["model"]["state"] == "ready"; }));
  s.ed->cmd("ai.set", {{"use_bbox", true}, {"bbox", {1.0, 2.0, 1.0}}, {"top_p", true}, {"variations", 2}});
  for (int i = 0; i < 3; ++i) s.frame();
  ASSERT_TRUE(s.ed->cmd("ai.generate", {{"prompt", "a barrel"}})["ok"].get<bool>());
  ASSERT_TRUE(s.frames_until([&] { return s.be->at_gate.load(); }));
  for (int i = 0; i < 3; ++i) s.frame();
  s.be->release();
  ASSERT_TRUE(s.frames_until([&] { return !s.ed->status()["busy"].get<bool>(); }));
  for (int i = 0; i < 3; ++i) s.frame();  // history with a thumbnail (no GL here: drawn as a button)
  EXPECT_EQ(s.ed->cmd("ai.history").size(), 2u);  // two variations, marked v1/2 and v2/2
  s.ed->cmd("ai.generate", {{"prompt", ""}});  // an error message in the panel
  for (int i = 0; i < 3; ++i) s.frame();
  EXPECT_NE(s.ed->errors().find("empty"), std::string::npos);
}

TEST(AiPanel, TypingIntoThePromptAndCtrlEnterGenerates) {
  PanelSetup s("panel_type");
  ASSERT_TRUE(s.frames_until([&] { return s.ed->status()["model"]["state"] == "ready"; }));
  s.ed->cmd("ai.ui_type", {{"text", "a wooden barrel"}});
  ASSERT_TRUE(s.frames_until([&] { return s.ed->status()["busy"].get<bool>() || s.ed->status()["last"]["id"] != 0; }))
      << s.ed->all_messages();
  EXPECT_EQ(s.ed->status()["form"]["prompt"], "a wooden barrel");
  ASSERT_TRUE(s.frames_until([&] { return !s.ed->status()["busy"].get<bool>(); }));
  EXPECT_EQ(s.ed->status()["last"]["prompt"], "a wooden barrel");
  EXPECT_EQ(s.ed->status()["last"]["state"], "done");
  EXPECT_EQ(s.ed->doc.history().undo_names().back(), "Generate: a wooden barrel");
  EXPECT_FALSE(s.ed->status()["ui"]["typing"].get<bool>());
}

TEST(AiPanel, EscCancels) {
  PanelSetup s("panel_esc");
  s.be->script.gate_at = "token:10";
  ASSERT_TRUE(s.frames_until([&] { return s.ed->status()["model"]["state"] == "ready"; }));
  ASSERT_TRUE(s.ed->cmd("ai.generate", {{"prompt", "a lamp"}})["ok"].get<bool>());
  ASSERT_TRUE(s.frames_until([&] { return s.be->at_gate.load(); }));
  ImGui::GetIO().KeysDown[256] = true;
  s.frame();
  ImGui::GetIO().KeysDown[256] = false;
  ASSERT_TRUE(s.frames_until([&] { return !s.ed->status()["busy"].get<bool>(); }, 5));
  EXPECT_EQ(s.ed->status()["last"]["state"], "cancelled");
}
