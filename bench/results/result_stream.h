#pragma once
// Reading back the stream a run of trainscope wrote (<out>.jsonl, bench/results/result_writer.h). A child
// run (a scale point, a transport variant) that was killed or hung leaves no document, only its stream.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

struct StreamedRun {
  nlohmann::json run;  // the last "run" line (its ended_at is set when the run finished); null when none
  std::vector<nlohmann::json> records;
};

// The bound on a result document or stream read back (as the reports tool's TRAINSCOPE_MAX_INPUT_BYTES default).
inline constexpr std::uint64_t kMaxResultFileBytes = std::uint64_t{2} << 30;

// A missing file is an empty run; a line that is not a JSON object (torn by a kill) is skipped. The file is read as
// any file trainscope did not write this run (base/input_file.h): a FIFO or a device put there is one line.
StreamedRun readStream(const std::string& jsonlPath);

// A child run's final document (<out>): null when there is none or it is not JSON (the run died before writing it).
nlohmann::json readDocument(const std::string& jsonPath);

}  // namespace ts
