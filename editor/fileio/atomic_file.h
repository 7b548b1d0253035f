// Owns the file writes of the editor and its plugins (library cubeforge_fileio): atomic whole-file writes (a temporary
// beside the target, written and fsynced when durable, then renamed over it and the folder fsynced, so a crash or a
// failed write never leaves a torn file) and log appends. Used by scene saving, the background writer
// (background_writer.h) and the AI plugin's exports and thumbnails.
#pragma once
#include <functional>
#include <string>

namespace cubeforge::fileio {

// Test hook: called at named points of a write ("write" after the data, "rename" before the rename; "append" before
// an append); returning false makes that step fail as if the disk had.
using FaultHook = std::function<bool(const std::string& stage, const std::string& path)>;

// Writes bytes to path atomically. durable: fsync the data before the rename and the folder after it (false: readers
// still see the old or the new file, but a power loss may leave the old one). Throws cubeforge::Error; on failure the
// old file is untouched and no temporary file is left behind. The folder must exist (create_parent_folders).
void atomic_write_file(const std::string& path, const std::string& bytes, const FaultHook& hook = {},
                       bool durable = true);

// Appends bytes to path (created when missing) through O_APPEND, without fsync: for logs, where a torn last
// line is skipped by the reader. Throws cubeforge::Error.
void append_to_file(const std::string& path, const std::string& bytes, const FaultHook& hook = {});

// Creates the folders above path that are missing. A failure is not reported here: the write that follows fails.
void create_parent_folders(const std::string& path);

}  // namespace cubeforge::fileio
