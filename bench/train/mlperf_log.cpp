#include "bench/train/mlperf_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "base/error.h"
#include "base/json_text.h"

namespace ts {

namespace {
std::FILE* openLog(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw UsageError(fmt::format("--mllog {}: cannot write it: {}", path, std::strerror(errno)));
  return f;
}

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

MlperfLog::MlperfLog(const std::string& path) : path_(path), file_(openLog(path), &std::fclose) {}

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
  if (std::fprintf(file_.get(), ":::MLLOG %s\n", jsonTextInOrder(line).c_str()) < 0 || std::fflush(file_.get()) != 0)
    throw Error(fmt::format("--mllog {}: writing failed: {}", path_, std::strerror(errno)));
}

}  // namespace ts
