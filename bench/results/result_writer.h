#pragma once
// The only place results are written (docs/architecture.md "A run, end to end"). Records stream to <out>.jsonl
// as they are measured (one JSON object a line, written at once: a crash or a kill keeps them); the final document
// is written once, at the end, to a temporary file that is fsync'ed and renamed over <out>, so <out> is
// either absent or complete, never half-written.
//
// The stream is created with the first record (base/atomic_file.h StreamFile): a run that ends before measuring
// anything touches nothing on disk, and an earlier run's <out>.jsonl, possibly the only copy of what a killed run
// measured, is never truncated or deleted: it is kept aside as <out>.jsonl.N when the new stream starts.
//
// The stream: a "run" line (the metadata as the run started, ended_at null), the records, and at finish
// the "run" line again with the end time. A stream whose last "run" line has no end time is a run that
// did not finish (killed, hung, crashed); the readers (reports/common/stream.py) mark it incomplete.
#include <initializer_list>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"  // StreamFile and writeFileAtomically, which the stream and the final document go through

namespace ts {

inline constexpr const char* kResultSchema = "trainscope/result/v1";

// Set by a trainscope that runs others and merges their results (collectives --transports) to the merged
// result's path: each part is removed once merged, so a run under it names the merged result, never its own
// files (issue #35: every path printed exists after the run).
inline constexpr const char* kMergedIntoVariable = "TRAINSCOPE_MERGED_INTO";

class ResultWriter {
 public:
  // jsonPath empty: nothing is written (records are still kept for the caller). Checks both paths; creates nothing.
  explicit ResultWriter(std::string jsonPath);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // The stream's first line: {"kind": "run", ...the run metadata}, written with the first record (a run
  // that ends before measuring anything leaves no stream behind).
  void begin(const nlohmann::json& run);
  void add(const nlohmann::json& record);
  // A record for the stream only: what a later record of the run sums up (a training run's steps, which
  // its train record holds). It is on disk at once, for a run that never gets to that later record.
  void stream(const nlohmann::json& record);
  // Writes {"schema", "run", "records"} atomically; `run` is the final metadata (with the end time).
  void finish(const nlohmann::json& run);

  const std::string& jsonPath() const { return jsonPath_; }
  const std::string& streamPath() const { return streamPath_; }
  const nlohmann::json& records() const { return records_; }

  // "<dir>/x.json" -> "<dir>/x.jsonl"; any other name gets ".jsonl" appended.
  static std::string streamPathFor(const std::string& jsonPath);

 private:
  void appendLines(std::initializer_list<nlohmann::json> lines);
  std::string jsonPath_;
  std::string streamPath_;
  std::unique_ptr<StreamFile> stream_;  // made with the first record
  nlohmann::json header_;
  bool wroteAny_ = false;
  long streamed_ = 0;  // records on the stream (the run lines not counted)
  nlohmann::json records_ = nlohmann::json::array();
};

}  // namespace ts
