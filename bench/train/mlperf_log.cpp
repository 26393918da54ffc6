#include "bench/train/mlperf_log.h"

#include <chrono>

#include "base/json_text.h"

namespace ts {

namespace {
const char* eventName(MlEvent e) {
  switch (e) {
    case MlEvent::kStart:
      return "INTERVAL_START";
    case MlEvent::kEnd:
      return "INTERVAL_END";
    case MlEvent::kPoint:
      break;
  }
  return "POINT_IN_TIME";
}
}  // namespace

MlperfLog::MlperfLog(const std::string& path) : file_(path) {}

void MlperfLog::log(MlEvent type, const std::string& key, const nlohmann::json& value, const nlohmann::json& metadata) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // mllog's key order (namespace, time_ms, event_type, key, value, metadata); UTF-8 made safe as everywhere.
  nlohmann::ordered_json line;
  line["namespace"] = "";
  line["time_ms"] = ms;
  line["event_type"] = eventName(type);
  line["key"] = key;
  line["value"] = value;
  line["metadata"] = metadata;
  file_.write(":::MLLOG " + jsonTextInOrder(line) + "\n");
}

}  // namespace ts
