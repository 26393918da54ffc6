#pragma once
// One run of trainscope from start to result document: the bootstrap (how the processes meet), the run
// metadata, and the result writer on process 0. A subcommand opens a session, runs one step (collectives)
// or several (suite) in its context, and finishes it, which writes the document.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/bootstrap.h"
#include "comm/communicator.h"

namespace ts {

class ResultWriter;
class TelemetrySampler;
class Watchdog;
class PeerCensus;

// What the steps of a run share.
struct RunContext {
  Bootstrap& boot;
  ResultWriter* writer;                              // process 0 only; null elsewhere
  std::string streamPath;                            // where records stream ("" when not writing)
  nlohmann::json layouts = nlohmann::json::array();  // one per step that built a communicator
  std::string step;                                  // the suite step running now ("" outside suites); records carry it
  const nlohmann::json* metadata = nullptr;          // the run metadata (hosts, environment)
  // Process 0, after recording a failure that will end the run (a peer gone): streams its own host's
  // telemetry now, since the session may never finish (unwinding can block on the dead peer).
  std::function<void()> keepTelemetry = [] {};

  // Gathers the ranks of a step's communicator (every process calls it) into run.layouts.
  void addLayout(const std::string& step, BackendKind backend, int worldSize, int gpusPerProcess, const nlohmann::json& myRanks);
};

class RunSession {
 public:
  // Meets the other processes, gathers the inventories and opens <jsonPath> (process 0). Errors are
  // agreed: every process throws the same one. From here to its end the session's watchdog guards whatever no
  // subcommand's watchdog does (the bootstrap, creating communicators, the final gathers) with `timeoutS`
  // (0: unguarded): a setup that cannot reach a peer ends with one line instead of hanging.
  static std::unique_ptr<RunSession> open(BootstrapKind bootstrap, bool wantMpi, const std::string& subcommand,
                                          const std::vector<std::string>& argv, const nlohmann::json& config,
                                          const std::string& jsonPath, double timeoutS);
  ~RunSession();
  RunContext& context() { return *ctx_; }
  Bootstrap& boot() { return *boot_; }
  const nlohmann::json& metadata() const { return meta_; }
  // Writes the result document (end time, layouts) and says where it is. Collective: every process calls it.
  void finish();
  // After a failure, on process 0 alone: writes the document of what was measured (its own host's telemetry,
  // nothing gathered: the others may be inside a collective, or gone). The other processes call nothing.
  void finishAfterFailure();

 private:
  RunSession() = default;
  void keepOwnTelemetry();                   // process 0: its host's telemetry record, streamed once
  std::unique_ptr<Watchdog> setupWatchdog_;  // declared first: it outlives the bootstrap it may abort through
  std::unique_ptr<Bootstrap> boot_;
  std::atomic<Bootstrap*> abortThrough_{nullptr};  // boot_, as the setup watchdog's thread may read it
  std::unique_ptr<PeerCensus> census_;             // multi-process runs: names the peers a timed-out wait lost
  std::unique_ptr<ResultWriter> writer_;
  std::unique_ptr<RunContext> ctx_;
  std::unique_ptr<TelemetrySampler> telemetry_;  // the first process on each host samples
  nlohmann::json meta_;
  bool finished_ = false;
  void writeDocument();  // process 0: the end time, the layouts, the document
};

// The timeout of a session whose subcommand has no --timeout (env, suite): their setup is guarded all the same.
inline constexpr double kSessionSetupTimeoutS = 300;

}  // namespace ts
