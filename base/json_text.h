#pragma once
// The one way trainscope turns JSON into text (result documents and streams, the JSON the processes
// gather, checkpoints, traces). Every string comes out valid UTF-8: a byte that is not (a label typed
// in Latin-1, an environment value such as NCCL_DEBUG, a file name) becomes U+FFFD.
//
// Why here and not where each string enters: strings reach documents from the command line, the
// environment, /proc and /sys, directory listings, suite files, other processes and the error messages
// that quote them, and the command line must stay raw so that a file with such a name still opens.
// nlohmann checks UTF-8 only when it writes text, and throws (type_error.316) on the first bad byte;
// replacing there covers every path at once. tests/unit/test_json_text.cpp holds every source file to
// this helper (no direct dump()).
#include <string>

#include <nlohmann/json.hpp>

namespace ts {

// nlohmann's text of j (indented by `indent` when >= 0), invalid UTF-8 replaced by U+FFFD.
std::string jsonText(const nlohmann::json& j, int indent = -1);
// The same for a document whose keys keep their insertion order (a safetensors header: "__metadata__"
// first, tensors in offset order). Without it an ordered_json would convert to json and sort its keys.
std::string jsonTextInOrder(const nlohmann::ordered_json& j, int indent = -1);
// One line with the separators of Python's json.dumps, ", " and ": " ({"rank": 1, "ts": [1, 2]}), for files that
// other tools search as text: Holistic Trace Analysis finds a trace's rank with the regex "rank":\s+(\d+).
std::string jsonTextSpaced(const nlohmann::json& j);

}  // namespace ts
