#include "bench/results/result_writer.h"

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
#include "bench/failures/activity.h"

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
// The stopping signals (bench/failures/activity.h) held back while a record goes to the stream: their
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
}

ResultWriter::~ResultWriter() {
  // A stream whose first write failed part-way holds no result: this run made it, so it goes.
  if (stream_ && !wroteAny_) stream_->remove();
}

void ResultWriter::appendLines(std::initializer_list<nlohmann::json> lines) {
  if (jsonPath_.empty()) return;
  std::string text;
  for (const nlohmann::json& j : lines) {
    nlohmann::json clean = j;
    scrubNonFinite(clean);
    text += jsonText(clean) + "\n";
  }
  if (!stream_) stream_ = std::make_unique<StreamFile>(streamPath_);
  stream_->write(text);  // one write: the header and the first record land together
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
  if (stream_) activity::streamWriteStarts();
  if (!wroteAny_) {
    appendLines({header_, record});  // the header goes out with the first record
    wroteAny_ = true;
  } else {
    appendLines({record});
  }
  if (stream_) activity::recordsStreamed(++streamed_);  // what a signal's line can say was kept
}

void ResultWriter::finish(const nlohmann::json& run) {
  if (jsonPath_.empty()) return;
  nlohmann::json last = run;  // the stream says the run finished, for readers of the stream alone
  last["kind"] = "run";
  last["schema"] = kResultSchema;
  if (!wroteAny_)
    appendLines({header_, last});
  else
    appendLines({last});
  wroteAny_ = true;
  stream_->sync();
  nlohmann::json doc = {{"schema", kResultSchema}, {"run", run}, {"records", records_}};
  scrubNonFinite(doc);
  writeFileAtomically(jsonPath_, jsonText(doc, 1) + "\n");
}

}  // namespace ts
