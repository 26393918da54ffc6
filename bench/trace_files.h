#pragma once
// `--trace DIR`: every rank's spans as Chrome trace JSON (Perfetto, chrome://tracing, Holistic Trace
// Analysis: `distributedInfo.rank` is set), DIR/rank-<r>.json, and DIR/merged.json with every rank on one
// time axis (pid = rank). Times are microseconds since a barrier all ranks left together at the start:
// the ranks' clocks are aligned to that barrier's exit, good to its exit skew (microseconds on one host,
// tens on a network), which trace.json's "clock" entry states.
#include <string>

#include <nlohmann/json.hpp>

namespace ts {

class Bootstrap;

class TraceFiles {
 public:
  // Collective: every process calls it (and finish) with the same directory.
  TraceFiles(Bootstrap& boot, std::string dir, int worldSize);
  // Stops recording and writes the files; collective. `about` (this rank's place in the run, e.g. its
  // data/tensor/pipeline coordinates) goes into the file's "trainscope" entry beside `what`.
  void finish(const std::string& what, const nlohmann::json& about = nlohmann::json::object());

 private:
  Bootstrap& boot_;
  std::string dir_;
  int world_;
  double originUs_ = 0;
};

}  // namespace ts
