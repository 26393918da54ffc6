#pragma once
// Reading back the stream a run of trainscope wrote (<out>.jsonl, bench/session/result_writer.h). A child
// run (a scale point, a transport variant) that was killed or hung leaves no document, only its stream.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

struct StreamedRun {
  nlohmann::json run;  // the last "run" line (its ended_at is set when the run finished); null when none
  std::vector<nlohmann::json> records;
};

// A missing file is an empty run; a line that is not a JSON object (torn by a kill) is skipped.
StreamedRun readStream(const std::string& jsonlPath);

}  // namespace ts
