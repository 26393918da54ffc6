#pragma once
// Where trainscope's data lives (the reports/ tool, the suites), so that an installed or unpacked trainscope
// needs no TRAINSCOPE_HOME: $TRAINSCOPE_HOME when set; else beside the binary as installed
// (<prefix>/bin/trainscope -> <prefix>/share/trainscope, wherever the prefix or the unpacked package is); else
// the source tree a build-tree binary was built from.
#include <filesystem>
#include <optional>
#include <string>

namespace ts {

// The first candidate that holds reports/__main__.py; nullopt when none does.
std::optional<std::filesystem::path> dataHome();
// Where dataHome() was looked for, for an error line.
std::string dataHomeCandidates();

// A suite named on the command line: an existing file as given, else (a bare name such as `ci` or `ci.toml`)
// the suite of that name shipped with trainscope. UsageError naming the shipped ones when it is neither.
std::string resolveSuite(const std::string& nameOrPath);

}  // namespace ts
