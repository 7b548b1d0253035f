// GL-free pieces of the AI plugin: placement math, bbox range checks, form/spec JSON (variations included),
// latency percentiles and the CSV/JSON report (one record for a job's variations), the log's lines through the
// background writer, the history store (files, reopen, corrupt index, one entry per variation), the software
// thumbnail, model-dir checks.
#include "appearance/prompt_colour.h"
#include "fake_backend.h"
#include "history/history.h"
#include "history/thumbnail.h"
#include "latency/latency.h"
#include "placement/placement.h"
#include "settings/settings.h"
#include "worker/cube3d_backend.h"
#include "worker_test_util.h"
#include "write_gate.h"

#include <cubeforge/error.h>
#include <gtest/gtest.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

using namespace cubeforge;
using namespace cubeforge::ai;
using namespace cubeforge::ai::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("cf_ai_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
};
}  // namespace

TEST(AiPlacement, BoundsFitAndGhostTransform) {
  Mesh m = box_mesh(1, 1.f, 2.f, 0.5f);
  Bounds b = mesh_bounds(m);
  ASSERT_TRUE(b.valid);
  EXPECT_FLOAT_EQ(b.size()[0], 2.f);
  EXPECT_FLOAT_EQ(b.size()[1], 4.f);
  EXPECT_FLOAT_EQ(b.size()[2], 1.f);
  EXPECT_FLOAT_EQ(fit_scale(b.size(), std::nullopt), 1.f);
  EXPECT_FLOAT_EQ(fit_scale(b.size(), std::array<float, 3>{4.f, 4.f, 4.f}), 1.f);
  EXPECT_FLOAT_EQ(fit_scale(b.size(), std::array<float, 3>{1.f, 8.f, 8.f}), 0.5f);
  // Ghost: base centre lands on the spot.
  const Vec3 spot{3.f, 1.f, -2.f};
  auto t = ghost_transform(b, 0.5f, spot);
  const float base_y = t.position[1] + 0.5f * b.min[1];
  EXPECT_FLOAT_EQ(base_y, 1.f);
  EXPECT_FLOAT_EQ(t.position[0] + 0.5f * 0.5f * (b.min[0] + b.max[0]), 3.f);
  base_centre_and_scale(m, 2.f);
  Bounds c = mesh_bounds(m);
  EXPECT_FLOAT_EQ(c.min[1], 0.f);
  EXPECT_FLOAT_EQ(c.max[1], 8.f);
  EXPECT_FLOAT_EQ(c.min[0], -2.f);
}

// A spot from a ray hit is placed without float noise or -0.
TEST(AiPlacement, CleanSpot) {
  const Vec3 c = clean_spot({-1e-7f, 1.99999988f, 0.25f});
  EXPECT_EQ(c, (Vec3{0.f, 2.f, 0.25f}));
  EXPECT_FALSE(std::signbit(c[0]));
  EXPECT_FALSE(std::signbit(clean_spot({-0.f, 0.f, 0.f})[0]));
  EXPECT_EQ(clean_spot({-3.5f, 12.3456f, 1e6f}), (Vec3{-3.5f, 12.3456f, 1e6f}));
}

TEST(AiPlacement, BBoxRangeMessages) {
  EXPECT_EQ(check_bbox({1.f, 2.f, 0.5f}), "");
  EXPECT_NE(check_bbox({0.f, 1.f, 1.f}).find("out of range"), std::string::npos);
  EXPECT_NE(check_bbox({-1.f, 1.f, 1.f}).find("between"), std::string::npos);
  EXPECT_NE(check_bbox({5000.f, 1.f, 1.f}).find("out of range"), std::string::npos);
  EXPECT_NE(check_bbox({std::nanf(""), 1.f, 1.f}).find("out of range"), std::string::npos);
  EXPECT_NE(check_bbox({100.f, 1.f, 1.f}).find("shortest"), std::string::npos);
}

TEST(AiPlacement, ShortPrompt) {
  EXPECT_EQ(short_prompt("  a   red\nchair "), "a red chair");
  const std::string s = short_prompt(std::string(100, 'x'), 10);
  EXPECT_EQ(s, std::string(10, 'x') + "\xE2\x80\xA6");
}

TEST(AiSettings, FormRoundTripAndStrictApply) {
  FormSettings f;
  f.prompt = "a lamp";
  f.seed = 123456789012ull;
  f.top_p = true;
  f.top_p_value = 0.7f;
  f.bbox = {1.f, 2.f, 3.f};
  f.use_bbox = true;
  f.attention = AttentionMode::Causal;
  f.resolution = 6;
  const FormSettings g = form_from_json(to_json(f));
  EXPECT_EQ(to_json(g), to_json(f));
  // Lenient load of junk keeps defaults; strict apply rejects wrong types.
  EXPECT_EQ(form_from_json(json{{"seed", "nope"}}).seed, FormSettings{}.seed);
  EXPECT_THROW(apply_json(f, json{{"seed", "nope"}}), Error);
  apply_json(f, json{{"resolution", 99}});
  EXPECT_EQ(f.resolution, 9);

  JobSpec s = make_spec(f, "/m", true);
  EXPECT_TRUE(s.request.bbox.has_value());
  EXPECT_FALSE(make_spec(f, "/m", false).request.bbox.has_value());  // model without bbox support
  ASSERT_TRUE(s.request.top_p.has_value());
  EXPECT_FLOAT_EQ(*s.request.top_p, 0.7f);
  EXPECT_EQ(s.face_cap, 20000u);
  const JobSpec t = spec_from_json(spec_to_json(s));
  EXPECT_EQ(spec_to_json(t), spec_to_json(s));
  EXPECT_EQ(t.request.seed, 123456789012ull);
}

// The negative prompt travels form -> JSON -> job -> history spec, and only with guidance (the field is disabled at
// guidance 0, where the request would be rejected).
TEST(AiSettings, NegativePromptReachesTheJobOnlyWithGuidance) {
  FormSettings f;
  f.prompt = "a lamp";
  f.negative_prompt = "a table";
  EXPECT_EQ(form_from_json(to_json(f)).negative_prompt, "a table");
  FormSettings g;
  apply_json(g, json{{"negative_prompt", "a chair"}});
  EXPECT_EQ(g.negative_prompt, "a chair");
  EXPECT_THROW(apply_json(g, json{{"negative_prompt", 3}}), Error);
  const JobSpec s = make_spec(f, "/m", false);
  EXPECT_EQ(s.request.negative_prompt, "a table");
  EXPECT_EQ(spec_from_json(spec_to_json(s)).request.negative_prompt, "a table");
  f.guidance = 0.f;
  EXPECT_EQ(make_spec(f, "/m", false).request.negative_prompt, "");
  EXPECT_EQ(spec_from_json(json{{"prompt", "a lamp"}}).request.negative_prompt, "");  // older history entries
}

TEST(AiSettings, VariationsRoundTripAndNeedTopP) {
  FormSettings f;
  f.prompt = "a lamp";
  f.top_p = true;
  f.variations = 3;
  EXPECT_EQ(form_from_json(to_json(f)).variations, 3);
  json old = to_json(f);
  old.erase("variations");
  EXPECT_EQ(form_from_json(old).variations, 1);                           // settings saved before variations
  EXPECT_EQ(form_from_json(json{{"variations", 9}}).variations, kMaxFormVariations);  // clamped on load
  EXPECT_THROW(apply_json(f, json{{"variations", "three"}}), Error);

  JobSpec s = make_spec(f, "/m", false);
  EXPECT_EQ(s.request.variations, 3);
  const JobSpec back = spec_from_json(spec_to_json(s));
  EXPECT_EQ(back.request.variations, 3);
  json old_spec = spec_to_json(s);
  old_spec.erase("variations");
  EXPECT_EQ(spec_from_json(old_spec).request.variations, 1);  // older history entries
  f.top_p = false;  // greedy: the control is off and one shape is made
  EXPECT_EQ(make_spec(f, "/m", false).request.variations, 1);

  const JobSpec v2 = variation_spec(s, 2);
  EXPECT_EQ(v2.request.seed, s.request.seed + 2);
  EXPECT_EQ(v2.request.variations, 1);
  EXPECT_EQ(v2.request.prompt, "a lamp");

  EXPECT_EQ(check_variations(1, false), "");
  EXPECT_EQ(check_variations(4, true), "");
  EXPECT_NE(check_variations(2, false).find("top-p"), std::string::npos);
  EXPECT_NE(check_variations(5, true).find("1 to 4"), std::string::npos);
  EXPECT_NE(check_variations(0, true).find("1 to 4"), std::string::npos);
}

// "a red chair" is painted red: the first colour word, whole words only, any case; materials by their colour.
TEST(AiColour, ColourWordsOfThePrompt) {
  auto word = [](const std::string& p) {
    const auto c = colour_in_prompt(p);
    return c ? c->word : std::string("-");
  };
  EXPECT_EQ(word("a red chair"), "red");
  EXPECT_EQ(word("A RED CHAIR!"), "red");
  EXPECT_EQ(word("a chair, red."), "red");
  EXPECT_EQ(word("a wooden table with a blue top"), "wood");  // the first one wins
  EXPECT_EQ(word("a gray stone"), "grey");
  EXPECT_EQ(word("a bored reddish predator"), "-");          // not inside other words
  EXPECT_EQ(word("a tall pagoda"), "-");
  EXPECT_EQ(word(""), "-");
  const auto red = colour_in_prompt("red")->rgb, white = colour_in_prompt("white")->rgb;
  EXPECT_GT(red[0], 0.4f);  // linear RGB: red dominant, dark green and blue
  EXPECT_LT(red[1], 0.1f);
  EXPECT_LT(red[2], 0.1f);
  for (float c : white) EXPECT_GT(c, 0.85f);
  for (float c : {0.f, 0.02f, 0.2f, 0.5f, 0.9f, 1.f}) EXPECT_NEAR(linear_to_srgb(srgb_to_linear(c)), c, 1e-5f);
}

// The form's colour choice becomes the job's vertex colour (resolved when the job is made) and survives the history.
TEST(AiColour, FormColourReachesTheJob) {
  FormSettings f;
  f.prompt = "a red chair";
  ASSERT_TRUE(make_spec(f, "/m", false).vertex_colour.has_value());  // default: from the prompt
  EXPECT_EQ(*make_spec(f, "/m", false).vertex_colour, colour_in_prompt("red")->rgb);
  f.prompt = "a chair";
  EXPECT_FALSE(make_spec(f, "/m", false).vertex_colour.has_value());  // no colour word: no vertex colours
  apply_json(f, json{{"vertex_colour", "custom"}, {"colour", {0.1, 0.2, 0.3}}});
  ASSERT_TRUE(make_spec(f, "/m", false).vertex_colour.has_value());
  EXPECT_EQ(*make_spec(f, "/m", false).vertex_colour, (std::array<float, 3>{0.1f, 0.2f, 0.3f}));
  const JobSpec s = make_spec(f, "/m", false);
  EXPECT_EQ(spec_from_json(spec_to_json(s)).vertex_colour, s.vertex_colour);
  EXPECT_EQ(form_from_json(to_json(f)).vertex_colour, VertexColour::Custom);
  f.prompt = "a red chair";
  apply_json(f, json{{"vertex_colour", "none"}});
  EXPECT_FALSE(make_spec(f, "/m", false).vertex_colour.has_value());
  EXPECT_THROW(apply_json(f, json{{"vertex_colour", "blue"}}), Error);
  EXPECT_FALSE(spec_from_json(json{{"prompt", "a red chair"}}).vertex_colour.has_value());  // older history entries
}

// The live preview's ghost takes the job's colour (lifted towards white, the default ghost's alpha) or, with none,
// the default ghost colour.
TEST(AiColour, PreviewGhostTakesTheJobsColour) {
  const std::array<float, 4> blue{0.35f, 0.75f, 1.0f, 0.35f};
  EXPECT_EQ(ghost_tint(std::nullopt, blue), blue);
  const auto red = ghost_tint(colour_in_prompt("red")->rgb, blue);
  EXPECT_GT(red[0], 0.5f);
  EXPECT_GT(red[0], 2.f * red[1]);
  EXPECT_GT(red[0], 2.f * red[2]);
  EXPECT_FLOAT_EQ(red[3], 0.35f);
  const auto black = ghost_tint(Rgb{0.f, 0.f, 0.f}, blue);  // still visible: lifted, grey
  EXPECT_GT(black[0], 0.1f);
  EXPECT_FLOAT_EQ(black[0], black[1]);
  EXPECT_FLOAT_EQ(black[1], black[2]);
  const auto white = ghost_tint(Rgb{1.f, 1.f, 1.f}, blue);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(white[i], 1.f);
}

TEST(AiLatency, Percentiles) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  auto p = percentiles(v);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p95, 95);
  EXPECT_EQ(p.max, 100);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
  EXPECT_EQ(percentiles({}).n, 0u);
  EXPECT_EQ(percentiles({7}).p95, 7);
}

TEST(AiLatency, RecordCsvJsonAndPersistence) {
  TempDir tmp;
  JobEvent ev;
  ev.job = 5;
  ev.state = JobState::Done;
  auto spec = std::make_shared<JobSpec>(fake_spec("a \"quoted\", prompt", 9));
  ev.spec = spec;
  auto out = std::make_shared<JobOutput>();
  out->stats.token_ms = {100, 110, 125, 135};
  out->stats.ttft_ms = 100;
  out->stats.first_preview_ms = 120;
  out->stats.gpt_ms = 140;
  out->stats.latent_ms = 5;
  out->stats.occupancy_ms = 20;
  out->stats.meshing_ms = 3;
  out->stats.cleanup_ms = 2;
  out->decimate_ms = 1;
  out->wall_ms = 200;
  out->mesh = std::make_shared<Mesh>(box_mesh());
  ev.output = out;
  LatencyRecord r = make_record(ev, {16, 17, 40}, "tiny", "CPU");
  EXPECT_EQ(r.tokens, 4);
  EXPECT_DOUBLE_EQ(r.ttft_ms, 100);
  EXPECT_DOUBLE_EQ(r.tpot_ms.p50, 10);
  EXPECT_DOUBLE_EQ(r.tpot_ms.max, 15);
  EXPECT_DOUBLE_EQ(r.decode_ms, 25);
  EXPECT_DOUBLE_EQ(r.meshing_ms, 6);
  EXPECT_DOUBLE_EQ(r.total_ms, 200);
  EXPECT_DOUBLE_EQ(r.ui_frame_ms.max, 40);
  EXPECT_EQ(r.faces, 12u);

  const std::string path = (tmp.path / "log.jsonl").string();
  {
    LatencyLog log(path);
    log.add(r);
    r.job = 6;
    r.state = "failed";
    r.error = "boom";
    log.add(r);
  }
  LatencyLog again(path);
  ASSERT_EQ(again.records().size(), 2u);
  EXPECT_EQ(again.records()[0].prompt, "a \"quoted\", prompt");
  EXPECT_DOUBLE_EQ(again.records()[0].tpot_ms.p95, 15);
  const std::string csv = records_csv(again.records());
  EXPECT_EQ(csv.substr(0, 10), "job,time,p");
  EXPECT_NE(csv.find("\"a \"\"quoted\"\", prompt\""), std::string::npos);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  json j = json::parse(records_json(again.records()));
  EXPECT_EQ(j["summary"]["jobs"], 2);
  EXPECT_EQ(j["summary"]["done"], 1);
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["jobs"][1]["error"], "boom");
  again.export_csv((tmp.path / "out" / "r.csv").string());
  again.export_json((tmp.path / "out" / "r.json").string());
  EXPECT_TRUE(fs::exists(tmp.path / "out" / "r.csv"));
  EXPECT_TRUE(fs::exists(tmp.path / "out" / "r.json"));
  // Unwritable target: a clear error, no partial file.
  EXPECT_THROW(again.export_csv("/proc/forbidden/x.csv"), Error);
  EXPECT_THROW(again.export_json(""), Error);
}

// One record for a job of several variations: tokens, shape stages, faces summed; TPOT from the gaps inside each
// variation (a GPU batch: the same step times); decode rate over all tokens; previews once (the run's); a
// "variations" column at the end.
TEST(AiLatency, OneRecordForAllVariations) {
  JobEvent ev;
  ev.job = 9;
  ev.state = JobState::Done;
  auto spec = std::make_shared<JobSpec>(fake_spec("a lamp", 5));
  spec->request.top_p = 0.9f;
  spec->request.variations = 2;
  ev.spec = spec;
  for (int v = 0; v < 2; ++v) {
    auto out = std::make_shared<JobOutput>();
    out->variation = v;
    out->seed = 5 + uint64_t(v);
    out->stats.text_ms = 50;
    out->stats.ttft_ms = 100;
    out->stats.token_ms = {100, 110, 120, 130};  // decoded together: the same step times
    out->stats.latent_ms = 5;
    out->stats.occupancy_ms = 20;
    out->stats.meshing_ms = 3;
    out->stats.cleanup_ms = 2;
    out->stats.previews = 3;  // the library gives the whole run's previews in every variation's stats
    out->stats.preview_ms_total = 12;
    out->decimate_ms = 1;
    out->wall_ms = 300;
    out->tokens = {1, 2, 3, 4};
    out->mesh = std::make_shared<Mesh>(box_mesh());
    ev.outputs.push_back(out);
  }
  ev.output = ev.outputs[0];
  const LatencyRecord r = make_record(ev, {16}, "tiny", "CPU");
  EXPECT_EQ(r.variations, 2);
  EXPECT_EQ(r.seed, 5u);
  EXPECT_EQ(r.tokens, 8);
  EXPECT_EQ(r.tokens_total, 8);
  EXPECT_DOUBLE_EQ(r.tpot_ms.p50, 10);
  EXPECT_DOUBLE_EQ(r.tpot_ms.max, 10);
  EXPECT_NEAR(r.tokens_per_s, 7 * 1000.0 / 30.0, 1e-9);  // 8 tokens from 100 to 130 ms
  EXPECT_DOUBLE_EQ(r.gpt_ms, 80);                        // end of the text stage (50) to the last token (130)
  EXPECT_DOUBLE_EQ(r.decode_ms, 50);
  EXPECT_DOUBLE_EQ(r.meshing_ms, 12);
  EXPECT_DOUBLE_EQ(r.total_ms, 300);
  EXPECT_EQ(r.faces, 24u);
  EXPECT_DOUBLE_EQ(r.ttft_ms, 100);
  EXPECT_EQ(r.previews, 3);
  EXPECT_DOUBLE_EQ(r.preview_ms, 12);
  // The CSV keeps its columns and adds "variations" at the end; the JSON line reads it back.
  const auto cols = csv_columns();
  EXPECT_EQ(cols.front(), "job");
  EXPECT_EQ(cols[cols.size() - 2], "ui_frame_max_ms");
  EXPECT_EQ(cols.back(), "variations");
  const std::string row = to_csv_row(r);
  EXPECT_EQ(row.substr(row.rfind(',') + 1), "2");
  EXPECT_EQ(std::count(row.begin(), row.end(), ','), long(cols.size() - 1));
  TempDir tmp;
  const std::string path = (tmp.path / "log.jsonl").string();
  LatencyLog(path).add(r);
  ASSERT_EQ(LatencyLog(path).records().size(), 1u);
  EXPECT_EQ(LatencyLog(path).records()[0].variations, 2);
  // A line written before variations reads as one.
  std::ofstream(path, std::ios::trunc) << R"({"job": 1, "state": "done"})" << "\n";
  EXPECT_EQ(LatencyLog(path).records()[0].variations, 1);
}

// The log's lines go to the background writer: add() returns while the writer is parked in the first append, the
// lines land in order after the release, and clear() empties the file after the lines still waiting.
TEST(AiLatency, LinesGoThroughTheWriterInOrder) {
  TempDir tmp;
  const std::string path = (tmp.path / "logs" / "log.jsonl").string();
  cftest::WriteGate gate;
  auto writer = std::make_shared<fileio::BackgroundWriter>([&](const std::string& stage, const std::string&) {
    if (stage == "append") gate.park();
    return true;
  });
  LatencyLog log(path, writer);
  LatencyRecord r;
  for (JobId job : {1, 2, 3}) {
    r.job = job;
    log.add(r);
  }
  ASSERT_TRUE(gate.wait_parked());
  EXPECT_NE(gate.parked_on(), std::this_thread::get_id());
  EXPECT_EQ(log.records().size(), 3u);
  EXPECT_FALSE(fs::exists(path)) << "written while the writer was parked";
  gate.release();
  ASSERT_TRUE(writer->flush()) << writer->last_error();
  const auto back = LatencyLog(path).records();
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].job, 1u);
  EXPECT_EQ(back[2].job, 3u);
  r.job = 4;
  log.add(r);
  log.clear();
  r.job = 5;
  log.add(r);
  ASSERT_TRUE(writer->flush());
  ASSERT_EQ(LatencyLog(path).records().size(), 1u);
  EXPECT_EQ(LatencyLog(path).records()[0].job, 5u);
}

TEST(AiThumbnail, RendersTheShapeOverTheBackground) {
  RgbaImage img = render_thumbnail(box_mesh(2, 0.5f, 1.f, 0.3f), 64);
  ASSERT_EQ(img.width, 64);
  ASSERT_EQ(img.rgba.size(), 64u * 64u * 4u);
  const uint8_t* corner = &img.rgba[0];
  const uint8_t* centre = &img.rgba[(32 * 64 + 32) * 4];
  EXPECT_GT(int(centre[0]) + centre[1] + centre[2], int(corner[0]) + corner[1] + corner[2] + 100);
  TempDir tmp;
  const std::string p = (tmp.path / "t.png").string();
  write_png(img, p);
  RgbaImage back = read_png(p);
  EXPECT_EQ(back.rgba, img.rgba);
  // An empty mesh is just background, not a crash.
  EXPECT_EQ(render_thumbnail(Mesh{}, 16).rgba.size(), 16u * 16u * 4u);
  // A painted mesh shows its vertex colour (a red chair's thumbnail is red, not the default grey-blue).
  Mesh red = box_mesh(2, 0.5f, 1.f, 0.3f);
  red.colors.assign(red.positions.size(), Vec3{0.6f, 0.02f, 0.02f});
  const RgbaImage red_img = render_thumbnail(red, 64);
  const uint8_t* rc = &red_img.rgba[(32 * 64 + 32) * 4];
  EXPECT_GT(int(rc[0]), int(rc[1]) + 60);
  EXPECT_GT(int(rc[0]), int(rc[2]) + 60);
  EXPECT_LT(std::abs(int(centre[0]) - int(centre[2])), 40);  // the unpainted box stays grey-blue
}

TEST(AiHistory, SaveReopenPlaceExportDelete) {
  TempDir tmp;
  const std::string dir = (tmp.path / "history").string();
  JobSpec spec = fake_spec("a red chair", 11);
  auto out = std::make_shared<JobOutput>();
  out->mesh = std::make_shared<Mesh>(box_mesh(3));
  out->wall_ms = 1234;
  save_result(dir, spec, *out);
  ASSERT_FALSE(out->saved_id.empty());
  ASSERT_TRUE(out->thumbnail);
  std::string id;
  {
    HistoryStore h(dir);
    id = h.add(spec, *out);
    EXPECT_EQ(id, out->saved_id);
  }  // its own writer: the index is written when the store goes
  auto writer = std::make_shared<fileio::BackgroundWriter>();
  HistoryStore h(dir, writer);
  ASSERT_TRUE(h.load_error().empty()) << h.load_error();
  ASSERT_EQ(h.entries().size(), 1u);
  const HistoryEntry& e = h.entries()[0];
  EXPECT_EQ(e.prompt, "a red chair");
  EXPECT_EQ(e.seed, 11u);
  EXPECT_EQ(e.faces, 108u);
  EXPECT_EQ(spec_from_json(e.spec).request.seed, 11u);
  auto m = h.mesh(id);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->face_count(), 108u);
  auto th = h.thumbnail(id);
  ASSERT_TRUE(th);
  EXPECT_EQ(th->width, 96);
  const std::string exp = (tmp.path / "exp" / "chair.obj").string();
  h.export_mesh_to(id, exp);
  EXPECT_TRUE(fs::exists(exp));
  EXPECT_TRUE(h.remove(id));
  EXPECT_FALSE(fs::exists(fs::path(dir) / (id + ".glb")));
  EXPECT_FALSE(fs::exists(fs::path(dir) / (id + ".png")));
  EXPECT_TRUE(writer->flush()) << "the index went to the writer given";
  EXPECT_TRUE(HistoryStore(dir).entries().empty());
}

// Each variation of a job is an entry of its own: its seed (seed + v), settings of one variation (so "Same seed"
// remakes exactly it) and which variation of how many it was; older indexes read as single results.
TEST(AiHistory, OneEntryPerVariationWithItsOwnSeed) {
  TempDir tmp;
  const std::string dir = (tmp.path / "history").string();
  JobSpec job = fake_spec("a red chair", 11);
  job.request.top_p = 0.9f;
  job.request.variations = 3;
  JobOutput out;
  out.variation = 2;
  out.seed = 13;
  out.mesh = std::make_shared<Mesh>(box_mesh(1));
  {
    HistoryStore h(dir);
    h.add(job, out);
  }
  HistoryStore h(dir);
  ASSERT_EQ(h.entries().size(), 1u);
  const HistoryEntry& e = h.entries()[0];
  EXPECT_EQ(e.seed, 13u);
  EXPECT_EQ(e.variation, 2);
  EXPECT_EQ(e.variations, 3);
  const JobSpec again = spec_from_json(e.spec);
  EXPECT_EQ(again.request.seed, 13u);
  EXPECT_EQ(again.request.variations, 1);
  ASSERT_TRUE(again.request.top_p.has_value());

  std::ofstream(fs::path(dir) / "history.json", std::ios::trunc)
      << R"({"version": 1, "entries": [{"id": "old", "prompt": "a lamp", "seed": 4}]})";
  HistoryStore old(dir);
  ASSERT_EQ(old.entries().size(), 1u);
  EXPECT_EQ(old.entries()[0].variation, 0);
  EXPECT_EQ(old.entries()[0].variations, 1);
}

TEST(AiHistory, CorruptIndexIsMovedAside) {
  TempDir tmp;
  fs::create_directories(tmp.path / "h");
  std::ofstream(tmp.path / "h" / "history.json") << "{ not json";
  HistoryStore h((tmp.path / "h").string());
  EXPECT_TRUE(h.entries().empty());
  EXPECT_NE(h.load_error().find("corrupt"), std::string::npos);
  EXPECT_TRUE(fs::exists(tmp.path / "h" / "history.json.bad"));
}

TEST(AiModelDir, MissingFilesAreNamed) {
  TempDir tmp;
  EXPECT_NE(check_model_dir((tmp.path / "nope").string()).find("does not exist"), std::string::npos);
  const std::string msg = check_model_dir(tmp.path.string());
  for (const char* f : {"config.yaml", "shape_gpt.safetensors", "shape_tokenizer.safetensors", "clip/"})
    EXPECT_NE(msg.find(f), std::string::npos) << msg;
  std::ofstream(tmp.path / "config.yaml") << "x: 1\n";
  std::ofstream(tmp.path / "shape_gpt.safetensors") << "junk";
  std::ofstream(tmp.path / "shape_tokenizer.safetensors") << "junk";
  fs::create_directories(tmp.path / "clip");
  const std::string msg2 = check_model_dir(tmp.path.string());
  EXPECT_EQ(msg2.find("shape_gpt"), std::string::npos);
  EXPECT_NE(msg2.find("clip/vocab.json"), std::string::npos);
  // The real backend turns corrupt files into a message naming the directory (no crash).
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) std::ofstream(tmp.path / "clip" / f) << "junk";
  EXPECT_EQ(check_model_dir(tmp.path.string()), "");
  auto be = make_cube3d_backend();
  try {
    be->load(tmp.path.string(), {}, nullptr);
    FAIL() << "a corrupt model loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(tmp.path.string()), std::string::npos) << e.what();
  }
}

TEST(AiPromptCheck, EmptyWithoutModel) {
  EXPECT_TRUE(check_prompt(nullptr, "  \n ").empty);
  EXPECT_FALSE(check_prompt(nullptr, "chair").empty);
}
