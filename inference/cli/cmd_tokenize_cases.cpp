// `cubeforge-gen tokenize-cases`: runs the CLIP tokenizer over a golden cases file (text, input_ids,
// attention_mask, bpe_ids), prints every mismatch and a final "tokenizer: N/M cases match" line.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.h"
#include "cubeforge/clip_tokenizer.h"
#include "cubeforge/error.h"

namespace {

template <typename T>
std::string join_ids(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

template <typename T>
bool check_field(const nlohmann::json& c, const char* field, const std::vector<T>& got, std::string& report) {
  if (!c.contains(field)) return true;  // a case may omit a field it does not pin down
  const auto expected = c.at(field).get<std::vector<T>>();
  if (expected == got) return true;
  report += std::string("  ") + field + ":\n    expected " + join_ids(expected) + "\n    got      " + join_ids(got) + "\n";
  return false;
}

int run_tokenize_cases(int argc, char** argv) {
  CLI::App app{"Check the CLIP tokenizer against golden cases", argv[0]};
  std::string vocab, merges, cases_path;
  app.add_option("--vocab", vocab, "CLIP vocab.json")->required();
  app.add_option("--merges", merges, "CLIP merges.txt")->required();
  app.add_option("cases", cases_path, "golden cases JSON (clip_tokenizer_cases.json)")->required();
  CLI11_PARSE(app, argc, argv);

  const auto t0 = std::chrono::steady_clock::now();
  const auto tokenizer = cubeforge::ClipTokenizer::load(vocab, merges);
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "tokenizer loaded in %.1f ms (%zu tokens)\n", load_ms, tokenizer.vocab_size());

  std::ifstream in(cases_path);
  if (!in) throw cubeforge::Error("cannot open cases file '" + cases_path + "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw cubeforge::Error("cases file '" + cases_path + "' is not valid JSON: " + e.what());
  }
  const nlohmann::json& cases = doc.is_object() ? doc.value("cases", nlohmann::json()) : doc;
  if (!cases.is_array()) throw cubeforge::Error("cases file '" + cases_path + "' has no \"cases\" array");
  const int max_length = doc.is_object() ? doc.value("max_length", 77) : 77;

  int bad_header = 0;
  if (doc.is_object()) {
    for (auto [key, want] : {std::pair{"bos", tokenizer.bos()}, {"eos", tokenizer.eos()}, {"pad", tokenizer.pad()}}) {
      if (doc.contains(key) && doc.at(key).get<int>() != want) {
        std::printf("MISMATCH %s id: expected %d, got %d\n", key, doc.at(key).get<int>(), want);
        ++bad_header;
      }
    }
  }

  int matched = 0;
  try {
    for (const auto& c : cases) {
      const std::string text = c.at("text").get<std::string>();
      const auto enc = tokenizer.encode(text, max_length);
      std::string report;
      bool ok = check_field(c, "input_ids", enc.input_ids, report);
      ok = check_field(c, "attention_mask", enc.attention_mask, report) && ok;
      ok = check_field(c, "bpe_ids", enc.bpe_ids, report) && ok;
      if (ok) {
        ++matched;
      } else {
        std::printf("MISMATCH text %s\n%s", nlohmann::json(text).dump().c_str(), report.c_str());
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw cubeforge::Error("cases file '" + cases_path + "': malformed case: " + e.what());
  }

  std::printf("tokenizer: %d/%zu cases match\n", matched, cases.size());
  return (matched == static_cast<int>(cases.size()) && bad_header == 0) ? 0 : 1;
}

}  // namespace

CUBEFORGE_COMMAND("tokenize-cases", "check the CLIP tokenizer against golden cases", run_tokenize_cases);
