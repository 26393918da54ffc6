#include "bench/session/result_stream.h"

#include <fstream>

namespace ts {

StreamedRun readStream(const std::string& jsonlPath) {
  StreamedRun out;
  std::ifstream in(jsonlPath);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (j.value("kind", "") == "run")
      out.run = std::move(j);
    else
      out.records.push_back(std::move(j));
  }
  return out;
}

}  // namespace ts
