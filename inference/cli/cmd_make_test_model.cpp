// `cubeforge-gen make-test-model`: writes a seeded random-weight model in the reference directory layout
// (for tests, benchmarks and trying the editor before a trained model is at hand).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "command.h"
#include "cubeforge/test_model.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"Write a random-weight model directory (config.yaml, shape_gpt/shape_tokenizer.safetensors, clip/)", argv[0]};
  std::string out, preset = "tiny", tokenizer, storage = "f32";
  uint64_t seed = 1;
  app.add_option("--out,-o", out, "output directory")->required();
  app.add_option("--preset", preset, "tiny | small | mid | v0.1 | v0.5");
  app.add_option("--tokenizer", tokenizer, "directory with the CLIP vocab.json and merges.txt")->required();
  app.add_option("--seed", seed, "weight seed");
  app.add_option("--storage", storage, "f32 | f16 | bf16")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  const auto st = storage == "f32" ? cubeforge::StorageType::F32
                  : storage == "f16" ? cubeforge::StorageType::F16 : cubeforge::StorageType::BF16;
  cubeforge::write_random_model(out, cubeforge::test_model_preset(preset), tokenizer, seed, st);
  std::printf("wrote %s model to %s\n", preset.c_str(), out.c_str());
  return 0;
}

}  // namespace

CUBEFORGE_COMMAND("make-test-model", "write a seeded random-weight model directory", run);
