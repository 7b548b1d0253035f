// cubeforge-gen entry point: dispatches to the registered sub-commands (generate, golden, tokenize-cases, bench...).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "command.h"
#include "cubeforge/error.h"

namespace cubeforge::cli {

static std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
void register_command(const Command& cmd) { registry().push_back(cmd); }
const std::vector<Command>& commands() { return registry(); }

}  // namespace cubeforge::cli

static void usage() {
  std::fprintf(stderr, "usage: cubeforge-gen COMMAND [options]   (COMMAND --help for its options)\ncommands:\n");
  for (const auto& c : cubeforge::cli::commands()) std::fprintf(stderr, "  %-16s %s\n", c.name, c.help);
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : cubeforge::cli::commands()) {
    if (std::strcmp(c.name, argv[1]) != 0) continue;
    std::string prog = std::string("cubeforge-gen ") + c.name;
    argv[1] = prog.data();
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cubeforge-gen %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "cubeforge-gen: unknown command '%s'\n", argv[1]);
  usage();
  return 2;
}
