#pragma once
// An MLPerf log beside the result (--mllog FILE): one `:::MLLOG {json}` line per event, as
// mlperf_logging's mllog writes them — namespace, time_ms (Unix epoch, ms), event_type (POINT_IN_TIME,
// INTERVAL_START, INTERVAL_END), key, value, metadata — so its compliance checker and result parsers can
// read a trainscope run's time to target. Which events a run logs: mlperf_run_log.h. Each line is written at
// once: a killed run keeps what it logged. An earlier log at the path is kept aside as PATH.N, never
// truncated (base/atomic_file.h StreamFile).
#include <string>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"

namespace ts {

enum class MlEvent { kPoint, kStart, kEnd };

class MlperfLog {
 public:
  // Creates path (an earlier file there kept aside); one line (Error) when it cannot.
  explicit MlperfLog(const std::string& path);
  void log(MlEvent type, const std::string& key, const nlohmann::json& value = nullptr,
           const nlohmann::json& metadata = nlohmann::json::object());

 private:
  StreamFile file_;
};

}  // namespace ts
