// Plugin host: loading a directory with good and broken plugins, API contract (named undo step, rollback on
// exception, worker-thread posting, settings), runtime exceptions disabling a plugin, static linking.
#include <gtest/gtest.h>

#include "core_test_util.h"
#include "plugin_host/plugin_host.h"

#include <chrono>
#include <fstream>
#include <thread>

using namespace cubeforge::editor;

namespace {

struct HostFixture : ::testing::Test {
  cftest::TempDir cfg;
  Log log{false};
  Document doc{log};
  TaskQueue tasks;
  std::unique_ptr<PluginHost> host;
  void SetUp() override {
    ::setenv("CUBEFORGE_CONFIG_DIR", cfg.path.c_str(), 1);
    host = std::make_unique<PluginHost>(doc, tasks);
  }
  void TearDown() override {
    host.reset();
    ::unsetenv("CUBEFORGE_CONFIG_DIR");
  }
  bool logged(const std::string& needle) {
    for (auto& l : log.snapshot())
      if (l.text.find(needle) != std::string::npos) return true;
    return false;
  }
};

class StaticPlugin : public Plugin {
 public:
  void on_load(Host& h) override {
    h.add_command("static.ping", [](const std::string& a) { return "pong " + a; });
    h.add_panel("Static", [] { throw std::runtime_error("draw bug"); });
  }
};

}  // namespace

TEST_F(HostFixture, BrokenPluginsAreReportedAndSkipped) {
  std::string dir = CF_TEST_PLUGIN_DIR;
  // A file that is not a library at all.
  cftest::TempDir pdir;
  for (auto& f : std::filesystem::directory_iterator(dir)) std::filesystem::copy(f.path(), pdir.path / f.path().filename());
  std::ofstream(pdir / "zz_garbage.so") << "not an ELF file";
  auto st = host->load_directory(pdir.path.string());
  ASSERT_EQ(st.size(), 5u);
  std::map<std::string, PluginStatus> by;
  for (auto& s : st) by[std::filesystem::path(s.file).filename().string()] = s;
  EXPECT_TRUE(by["good_plugin.so"].loaded);
  EXPECT_FALSE(by["no_entry_plugin.so"].loaded);
  EXPECT_NE(by["no_entry_plugin.so"].error.find("missing symbol cubeforge_plugin_entry"), std::string::npos);
  EXPECT_FALSE(by["wrong_version_plugin.so"].loaded);
  EXPECT_NE(by["wrong_version_plugin.so"].error.find("API version 42"), std::string::npos);
  EXPECT_FALSE(by["throwing_plugin.so"].loaded);
  EXPECT_NE(by["throwing_plugin.so"].error.find("cannot find model weights"), std::string::npos);
  EXPECT_FALSE(by["zz_garbage.so"].loaded);
  EXPECT_NE(by["zz_garbage.so"].error.find("cannot load library"), std::string::npos);
  // The thrower's panel was dropped; the good one stays.
  ASSERT_EQ(host->panels().size(), 1u);
  EXPECT_EQ(host->panels()[0].title, "Good Panel");
  EXPECT_TRUE(logged("plugin thrower (throwing_plugin.so) skipped: exception in on_load"));
  EXPECT_TRUE(logged("no_entry_plugin.so skipped"));
  EXPECT_TRUE(host->load_directory((pdir.path / "does-not-exist").string()).empty());
}

TEST_F(HostFixture, CommandsMakeOneNamedUndoStepAndRollBack) {
  host->load_library(std::string(CF_TEST_PLUGIN_DIR) + "/good_plugin.so");
  ASSERT_TRUE(host->has_command("good.generate"));
  std::string gid = host->run_command("good.generate", "chair");
  EXPECT_EQ(doc.scene().size(), 4u);
  EXPECT_EQ(doc.history().undo_names().back(), "Generate: chair");
  EXPECT_EQ(doc.selection().ids(), std::vector<EntityId>{std::stoull(gid)});
  EXPECT_EQ(doc.scene().children(std::stoull(gid)).size(), 3u);
  size_t steps = doc.history().size();
  EXPECT_EQ(host->run_command("good.fail_midway", ""), "false");
  EXPECT_EQ(doc.scene().size(), 4u);
  EXPECT_EQ(doc.history().size(), steps);
  EXPECT_TRUE(logged("rolled back: model exploded"));
  doc.undo();
  EXPECT_TRUE(doc.scene().empty());
  EXPECT_THROW(host->run_command("good.throw", ""), cubeforge::Error);
  EXPECT_THROW(host->run_command("nope", ""), cubeforge::Error);
  EXPECT_TRUE(host->is_active("good"));  // a failing command does not disable the plugin
}

TEST_F(HostFixture, WorkerThreadPostsToMainThread) {
  host->load_library(std::string(CF_TEST_PLUGIN_DIR) + "/good_plugin.so");
  host->run_command("good.worker", "");
  for (int i = 0; i < 200 && doc.scene().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    host->frame();
  }
  ASSERT_EQ(doc.scene().size(), 1u);
  EXPECT_EQ(doc.history().undo_names().back(), "From worker");
}

TEST_F(HostFixture, SettingsPersistPerPlugin) {
  host->load_library(std::string(CF_TEST_PLUGIN_DIR) + "/good_plugin.so");
  EXPECT_EQ(host->run_command("good.get", ""), "\"none\"");
  EXPECT_EQ(host->run_command("good.set", "{\"seed\": 7}"), "{\"seed\":7}");
  host.reset();
  host = std::make_unique<PluginHost>(doc, tasks);
  host->load_library(std::string(CF_TEST_PLUGIN_DIR) + "/good_plugin.so");
  EXPECT_EQ(host->run_command("good.get", ""), "{\"seed\":7}");
  EXPECT_TRUE(std::filesystem::exists(cfg.path / "plugins" / "good.json"));
}

TEST_F(HostFixture, InputOverlayAndMenuDispatch) {
  host->load_library(std::string(CF_TEST_PLUGIN_DIR) + "/good_plugin.so");
  ViewportEvent ev;
  ev.type = ViewportEvent::Type::Press;
  EXPECT_FALSE(host->dispatch_input(ev));
  ev.ctrl = true;
  EXPECT_TRUE(host->dispatch_input(ev));
  ASSERT_EQ(host->menu_items().size(), 1u);
  host->run_menu_item(host->menu_items()[0]);
  EXPECT_TRUE(logged("[good] hello"));
}

TEST_F(HostFixture, StaticPluginAndRuntimeExceptionDisables) {
  auto st = host->load_static(make_plugin_entry<StaticPlugin>("static"));
  ASSERT_TRUE(st.loaded);
  EXPECT_EQ(host->run_command("static.ping", "x"), "pong x");
  ASSERT_EQ(host->panels().size(), 1u);
  host->draw_panel(host->panels()[0]);  // throws inside: plugin disabled, editor continues
  EXPECT_FALSE(host->is_active("static"));
  EXPECT_TRUE(host->panels().empty());
  EXPECT_FALSE(host->has_command("static.ping"));
  EXPECT_TRUE(logged("plugin static disabled"));
  // Duplicate names are refused.
  auto again = host->load_static(make_plugin_entry<StaticPlugin>("static"));
  EXPECT_FALSE(again.loaded);
  PluginEntry old = make_plugin_entry<StaticPlugin>("old");
  old.api_version = 0;
  EXPECT_FALSE(host->load_static(old).loaded);
}
