// `cubeforge-gen golden DIR NAME`: runs a golden case through the library and prints one line per tensor,
// then `golden NAME: max_rel_err=X tokens=match|mismatch`. Exit 0 only when every check holds.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "command.h"
#include "cubeforge/golden.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"Compare a golden case (../shared/golden/cube3d format) with this implementation", argv[0]};
  std::string dir, name;
  app.add_option("DIR", dir, "case directory")->required();
  app.add_option("NAME", name, "case name (files NAME_config.json, NAME_*.safetensors)")->required();
  CLI11_PARSE(app, argc, argv);
  auto r = cubeforge::run_golden(dir, name);
  for (const auto& l : r.lines) {
    std::printf("%-34s rel_err=%.3e  %s%s%s\n", l.tensor.c_str(), l.rel_err, l.ok ? "ok" : "FAIL",
                l.note.empty() ? "" : "  ", l.note.c_str());
  }
  std::printf("golden %s: max_rel_err=%.3e tokens=%s\n", name.c_str(), r.max_rel_err, r.tokens_match ? "match" : "mismatch");
  return r.ok() ? 0 : 1;
}

}  // namespace

CUBEFORGE_COMMAND("golden", "compare a golden case with this implementation", run);
