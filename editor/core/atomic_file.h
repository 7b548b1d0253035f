// Atomic file writes: a temporary beside the target, written and fsynced, then renamed over it and the folder
// fsynced, so a crash or a failed write never leaves a torn file. Used by scene saving and the settings' background
// writer.
#pragma once
#include <functional>
#include <string>

namespace cubeforge::editor {

// Test hook: called at named points of an atomic write ("write" after the data, "rename" before the rename);
// returning false makes that step fail as if the disk had.
using FaultHook = std::function<bool(const std::string& stage, const std::string& path)>;

// Writes bytes to path atomically. Throws cubeforge::Error; on failure the old file is untouched and no
// temporary file is left behind.
void atomic_write_file(const std::string& path, const std::string& bytes, const FaultHook& hook = {});

}  // namespace cubeforge::editor
