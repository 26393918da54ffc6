#pragma once
// Paths that come from the user (flags, suite files), checked before any work (docs/reliability.md
// "Paths"): a run must not measure for minutes and then find it cannot write its result, and must never
// replace what is not a regular file (as root, `--json /dev/null` would otherwise replace the system's
// /dev/null with a file). Each check throws UsageError "<what> <path>: <why>".
#include <cstdint>
#include <string>
#include <string_view>

namespace ts {

// A file trainscope will write: an existing regular file (not a symbolic link) it may write, or a new name
// whose nearest existing ancestor directory it may write into (the directories between are created).
void checkOutputFile(std::string_view what, const std::string& path);

// A directory trainscope will write files into: an existing directory it may write, or one it can create.
void checkOutputDirectory(std::string_view what, const std::string& path);

// A file trainscope will read: a regular file (through symbolic links) it may read, at most maxBytes long. Only a
// check ahead of the run: the reader itself opens it through base/input_file.h, which holds it to the same rules.
void checkInputFile(std::string_view what, const std::string& path, std::uintmax_t maxBytes);

// `name` as one file-name component: letters, digits, '.', '_' and '-' kept, anything else (a '/', "..",
// control bytes) becomes '_', no leading '.', at most 100 bytes, never empty.
std::string safeFileComponent(std::string_view name);

}  // namespace ts
