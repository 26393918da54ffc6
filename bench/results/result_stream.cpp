#include "bench/results/result_stream.h"

#include <sys/stat.h>

#include <sstream>

#include "base/input_file.h"

namespace ts {

namespace {
// The file's text, or "" when there is nothing at the path (a child that died before making it).
std::string readIfThere(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  return readInputFile("", path, kMaxResultFileBytes);
}
}  // namespace

StreamedRun readStream(const std::string& jsonlPath) {
  StreamedRun out;
  std::istringstream in(readIfThere(jsonlPath));
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

nlohmann::json readDocument(const std::string& jsonPath) {
  const std::string text = readIfThere(jsonPath);
  if (text.empty()) return nullptr;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  return doc.is_discarded() ? nlohmann::json() : doc;
}

}  // namespace ts
