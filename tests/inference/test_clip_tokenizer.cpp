// Tests of the CLIP tokenizer: every golden case of shared/golden/clip, truncation, the empty prompt,
// load errors (missing/corrupt files), words() and unknown_words(), plus a timing report.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "cubeforge/clip_tokenizer.h"
#include "cubeforge/error.h"

namespace fs = std::filesystem;
using cubeforge::ClipTokenizer;

namespace {

fs::path shared_dir() {
  const char* env = std::getenv("CUBEFORGE_SHARED_DIR");
  return env && *env ? fs::path(env) : fs::path("/work/shared");
}
std::string vocab_path() { return (shared_dir() / "data/clip-tokenizer/vocab.json").string(); }
std::string merges_path() { return (shared_dir() / "data/clip-tokenizer/merges.txt").string(); }

const ClipTokenizer& tokenizer() {
  static const ClipTokenizer tok = ClipTokenizer::load(vocab_path(), merges_path());
  return tok;
}

fs::path temp_file(const std::string& name, const std::string& contents) {
  const fs::path p = fs::temp_directory_path() / ("cubeforge_tok_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << contents;
  return p;
}

// Runs fn, expects a cubeforge::Error whose message contains needle.
template <typename Fn>
void expect_error_mentioning(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected cubeforge::Error mentioning '" << needle << "'";
  } catch (const cubeforge::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ClipTokenizer, SpecialIds) {
  EXPECT_EQ(tokenizer().bos(), 49406);
  EXPECT_EQ(tokenizer().eos(), 49407);
  EXPECT_EQ(tokenizer().pad(), 49407);
  EXPECT_EQ(tokenizer().vocab_size(), 49408u);
}

TEST(ClipTokenizer, GoldenCases) {
  const fs::path path = shared_dir() / "golden/clip/clip_tokenizer_cases.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const auto doc = nlohmann::json::parse(in);
  const int max_length = doc.value("max_length", 77);
  EXPECT_EQ(doc.at("bos").get<int>(), tokenizer().bos());
  EXPECT_EQ(doc.at("eos").get<int>(), tokenizer().eos());
  EXPECT_EQ(doc.at("pad").get<int>(), tokenizer().pad());
  ASSERT_GE(doc.at("cases").size(), 1u);
  for (const auto& c : doc.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    SCOPED_TRACE("text: " + nlohmann::json(text).dump());
    const auto enc = tokenizer().encode(text, max_length);
    EXPECT_EQ(enc.input_ids, c.at("input_ids").get<std::vector<int64_t>>());
    EXPECT_EQ(enc.attention_mask, c.at("attention_mask").get<std::vector<int64_t>>());
    EXPECT_EQ(enc.bpe_ids, c.at("bpe_ids").get<std::vector<int>>());
    EXPECT_FALSE(enc.truncated);
  }
}

TEST(ClipTokenizer, EncodingIsStableAcrossCalls) {
  // Second call goes through the per-word cache and must give the same ids.
  const auto a = tokenizer().encode("A red dragon with folded wings");
  const auto b = tokenizer().encode("A red dragon with folded wings");
  EXPECT_EQ(a.input_ids, b.input_ids);
  EXPECT_EQ(a.bpe_ids, (std::vector<int>{320, 736, 5471, 593, 25233, 5178}));
}

TEST(ClipTokenizer, TruncatesLongPromptKeepingEos) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "red dragon ";  // 80 content tokens
  const auto enc = tokenizer().encode(prompt);
  ASSERT_EQ(enc.input_ids.size(), 77u);
  ASSERT_EQ(enc.attention_mask.size(), 77u);
  EXPECT_TRUE(enc.truncated);
  EXPECT_EQ(enc.bpe_ids.size(), 80u);
  EXPECT_EQ(enc.input_ids.front(), 49406);
  EXPECT_EQ(enc.input_ids.back(), 49407);
  for (int i = 1; i < 76; ++i) EXPECT_EQ(enc.input_ids[i], enc.bpe_ids[i - 1]) << i;
  for (auto m : enc.attention_mask) EXPECT_EQ(m, 1);

  // Exactly 75 content tokens fit without truncation; 76 do not.
  std::string fit;
  for (int i = 0; i < 75; ++i) fit += "cats ";
  EXPECT_FALSE(tokenizer().encode(fit).truncated);
  EXPECT_TRUE(tokenizer().encode(fit + "cats").truncated);
}

TEST(ClipTokenizer, CustomMaxLength) {
  const auto enc = tokenizer().encode("a small wooden chair", 4);
  EXPECT_EQ(enc.input_ids, (std::vector<int64_t>{49406, 320, 2442, 49407}));
  EXPECT_EQ(enc.attention_mask, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_TRUE(enc.truncated);
  EXPECT_THROW(tokenizer().encode("x", 1), cubeforge::Error);
}

TEST(ClipTokenizer, EmptyPrompt) {
  for (const char* text : {"", "   \t\n "}) {
    const auto enc = tokenizer().encode(text);
    ASSERT_EQ(enc.input_ids.size(), 77u);
    EXPECT_EQ(enc.input_ids[0], 49406);
    EXPECT_EQ(enc.input_ids[1], 49407);
    for (std::size_t i = 2; i < 77; ++i) EXPECT_EQ(enc.input_ids[i], 49407);
    int ones = 0;
    for (auto m : enc.attention_mask) ones += static_cast<int>(m);
    EXPECT_EQ(ones, 2);
    EXPECT_EQ(enc.attention_mask[0], 1);
    EXPECT_EQ(enc.attention_mask[1], 1);
    EXPECT_TRUE(enc.bpe_ids.empty());
    EXPECT_FALSE(enc.truncated);
  }
}

TEST(ClipTokenizer, NormalizationEquivalences) {
  const auto& tok = tokenizer();
  // Case, whitespace runs and NFD accents normalize to the same ids.
  EXPECT_EQ(tok.encode("A  Red\tDRAGON").input_ids, tok.encode("a red dragon").input_ids);
  EXPECT_EQ(tok.encode("cafe\xCC\x81 au lait").bpe_ids, tok.encode("caf\xC3\xA9 au lait").bpe_ids);
  EXPECT_EQ(tok.encode("CAF\xC3\x89").bpe_ids, tok.encode("caf\xC3\xA9").bpe_ids);  // É lower-cases to é
  // Invalid UTF-8 does not throw and still yields BOS ... EOS.
  const auto bad = tok.encode("dragon \xFF\xFE wings");
  EXPECT_EQ(bad.input_ids.front(), 49406);
  EXPECT_FALSE(bad.bpe_ids.empty());
}

TEST(ClipTokenizer, Words) {
  const auto& tok = tokenizer();
  EXPECT_EQ(tok.words("  Don't STOP, it's 3D!  "),
            (std::vector<std::string>{"don", "'t", "stop", ",", "it", "'s", "3", "d", "!"}));
  EXPECT_EQ(tok.words("naïve Résumé"), (std::vector<std::string>{"naïve", "résumé"}));
  EXPECT_EQ(tok.words("x<|endoftext|>y"), (std::vector<std::string>{"x", "<|endoftext|>", "y"}));
  EXPECT_TRUE(tok.words("").empty());
}

TEST(ClipTokenizer, UnknownWords) {
  const std::unordered_set<std::string> known = {"a", "red", "dragon", "with", "wings", "chair"};
  const auto& tok = tokenizer();
  EXPECT_TRUE(cubeforge::unknown_words(tok, "A RED dragon, with wings!", known).empty());
  EXPECT_EQ(cubeforge::unknown_words(tok, "a red Zeppelin with zeppelin wings", known),
            (std::vector<std::string>{"zeppelin"}));  // lower-cased and de-duplicated
  // Punctuation, digits, contraction suffixes and special literals are not words.
  EXPECT_EQ(cubeforge::unknown_words(tok, "dragon's 42 wings?! <|startoftext|> Chaise-longue", known),
            (std::vector<std::string>{"chaise", "longue"}));
  EXPECT_EQ(cubeforge::unknown_words(tok, "Ölgemälde chair", known), (std::vector<std::string>{"ölgemälde"}));
  EXPECT_TRUE(cubeforge::unknown_words(tok, "", known).empty());
}

TEST(ClipTokenizer, MissingFilesNameThePath) {
  const std::string missing = (fs::temp_directory_path() / "cubeforge_no_such_dir/vocab.json").string();
  expect_error_mentioning([&] { ClipTokenizer::load(missing, merges_path()); }, missing);
  const std::string missing_merges = (fs::temp_directory_path() / "cubeforge_no_such_dir/merges.txt").string();
  expect_error_mentioning([&] { ClipTokenizer::load(vocab_path(), missing_merges); }, missing_merges);
}

TEST(ClipTokenizer, CorruptFilesNameThePath) {
  const fs::path bad_json = temp_file("corrupt_vocab.json", "{\"a\": 0, \"b\": ");
  expect_error_mentioning([&] { ClipTokenizer::load(bad_json.string(), merges_path()); }, bad_json.string());
  const fs::path not_object = temp_file("array_vocab.json", "[1, 2, 3]");
  expect_error_mentioning([&] { ClipTokenizer::load(not_object.string(), merges_path()); }, not_object.string());
  const fs::path no_bytes = temp_file("tiny_vocab.json", R"({"<|startoftext|>": 0, "<|endoftext|>": 1, "a": 2})");
  expect_error_mentioning([&] { ClipTokenizer::load(no_bytes.string(), merges_path()); }, no_bytes.string());
  const fs::path bad_merges = temp_file("bad_merges.txt", "#version: 0.2\ni n\nthis line is wrong\n");
  expect_error_mentioning([&] { ClipTokenizer::load(vocab_path(), bad_merges.string()); }, bad_merges.string() + "' line 3");
  const fs::path unknown_merge = temp_file("unknown_merges.txt", "#version: 0.2\nzzzz qqqq\n");
  expect_error_mentioning([&] { ClipTokenizer::load(vocab_path(), unknown_merge.string()); }, unknown_merge.string());
  for (const auto& p : {bad_json, not_object, no_bytes, bad_merges, unknown_merge}) fs::remove(p);
}

TEST(ClipTokenizer, Timing) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto tok = ClipTokenizer::load(vocab_path(), merges_path());
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  const std::string prompt = "Broad-winged flying red dragon, elongated, folded legs.";
  tok.encode(prompt);  // warm the word cache
  constexpr int kIters = 2000;
  const auto t1 = clock::now();
  for (int i = 0; i < kIters; ++i) tok.encode(prompt);
  const double encode_us = std::chrono::duration<double, std::micro>(clock::now() - t1).count() / kIters;
  std::printf("[ timing ] load %.1f ms, encode %.2f us/prompt\n", load_ms, encode_us);
  RecordProperty("load_ms", std::to_string(load_ms));
  RecordProperty("encode_us", std::to_string(encode_us));
  EXPECT_LT(encode_us, 1000.0);  // loose: microseconds expected, this only catches pathologies
}
