// Sub-command registry of cubeforge-gen: each cmd_*.cpp registers itself with CUBEFORGE_COMMAND and parses
// its own arguments (CLI11). main.cpp only dispatches on the first argument.
#pragma once
#include <string>
#include <vector>

namespace cubeforge::cli {

struct Command {
  const char* name;
  const char* help;
  int (*run)(int argc, char** argv);  // argv[0] is "cubeforge-gen NAME"
};

void register_command(const Command& cmd);
const std::vector<Command>& commands();

}  // namespace cubeforge::cli

#define CUBEFORGE_COMMAND(NAME, HELP, FN) \
  static const bool cubeforge_cmd_registered_##FN = (::cubeforge::cli::register_command({NAME, HELP, FN}), true)
