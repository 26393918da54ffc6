#include "bench/session/result_writer.h"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "base/error.h"
#include "base/json_text.h"
#include "base/user_paths.h"
#include "bench/session/activity.h"

namespace ts {

namespace {
// NaN and infinities are not JSON numbers; a figure that is not finite is written as null so the
// document stays valid (the schema then rejects it where a number is required, which is what we want).
void scrubNonFinite(nlohmann::json& j) {
  if (j.is_number_float()) {
    if (!std::isfinite(j.get<double>())) j = nullptr;
  } else if (j.is_structured()) {
    for (auto& v : j) scrubNonFinite(v);
  }
}
// The stopping signals (bench/session/activity.h) held back while a record goes to the stream: their
// handler says how many records the stream holds and exits, so it comes after a whole line and its count,
// never in the middle of a line.
class StopSignalsHeld {
 public:
  StopSignalsHeld() {
    sigset_t stop;
    sigemptyset(&stop);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, sig);
    pthread_sigmask(SIG_BLOCK, &stop, &old_);
  }
  ~StopSignalsHeld() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  StopSignalsHeld(const StopSignalsHeld&) = delete;
  StopSignalsHeld& operator=(const StopSignalsHeld&) = delete;

 private:
  sigset_t old_;
};

}  // namespace

std::string ResultWriter::streamPathFor(const std::string& jsonPath) {
  if (jsonPath.size() > 5 && jsonPath.ends_with(".json")) return jsonPath.substr(0, jsonPath.size() - 5) + ".jsonl";
  return jsonPath + ".jsonl";
}

ResultWriter::ResultWriter(std::string jsonPath) : jsonPath_(std::move(jsonPath)) {
  if (jsonPath_.empty()) return;
  streamPath_ = streamPathFor(jsonPath_);
  // Before anything is measured: both files can be written, and neither replaces what is not a file.
  checkOutputFile("--json", jsonPath_);
  checkOutputFile("--json", streamPath_);
  createParentDirectories(jsonPath_);
  stream_ = std::fopen(streamPath_.c_str(), "w");
  if (!stream_) throw UsageError(fmt::format("--json {}: cannot write {}: {}", jsonPath_, streamPath_, std::strerror(errno)));
}

ResultWriter::~ResultWriter() {
  if (!stream_) return;
  std::fclose(stream_);
  // A run that stopped before its first record (bad input found after start-up) leaves no file behind.
  if (!wroteAny_) std::remove(streamPath_.c_str());
}

void ResultWriter::appendLine(const nlohmann::json& j) {
  if (!stream_) return;
  nlohmann::json clean = j;
  scrubNonFinite(clean);
  const std::string line = jsonText(clean) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), stream_) != line.size() || std::fflush(stream_) != 0)
    throw Error(fmt::format("writing {} failed: {}", streamPath_, std::strerror(errno)));
}

void ResultWriter::begin(const nlohmann::json& run) {
  header_ = run;
  header_["kind"] = "run";
  header_["schema"] = kResultSchema;
}

void ResultWriter::add(const nlohmann::json& record) {
  records_.push_back(record);
  stream(record);
}

void ResultWriter::stream(const nlohmann::json& record) {
  const StopSignalsHeld held;
  if (!wroteAny_) appendLine(header_);  // the header goes out with the first record
  wroteAny_ = true;
  appendLine(record);
  if (stream_) activity::recordsStreamed(++streamed_);  // what a signal's line can say was kept
}

void ResultWriter::finish(const nlohmann::json& run) {
  if (jsonPath_.empty()) return;
  if (stream_) {
    if (!wroteAny_) appendLine(header_);
    wroteAny_ = true;
    nlohmann::json last = run;  // the stream says the run finished, for readers of the stream alone
    last["kind"] = "run";
    last["schema"] = kResultSchema;
    appendLine(last);
    ::fsync(::fileno(stream_));
  }
  nlohmann::json doc = {{"schema", kResultSchema}, {"run", run}, {"records", records_}};
  scrubNonFinite(doc);
  writeFileAtomically(jsonPath_, jsonText(doc, 1) + "\n");
}

}  // namespace ts
