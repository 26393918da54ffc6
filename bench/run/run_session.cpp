#include "bench/run/run_session.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <unistd.h>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/host_name.h"
#include "base/json_text.h"
#include "base/terminal_text.h"
#include "bench/failures/activity.h"
#include "bench/failures/agreement.h"
#include "bench/failures/peer_census.h"
#include "bench/failures/run_ending.h"
#include "bench/failures/watchdog.h"
#include "bench/results/result_writer.h"
#include "bench/run/compute_threads.h"
#include "bench/run/run_metadata.h"
#include "bench/telemetry/telemetry.h"
#include "comm/launcher.h"

namespace ts {

void RunContext::addLayout(const std::string& step, BackendKind backend, int worldSize, int gpusPerProcess,
                           const nlohmann::json& myRanks) {
  nlohmann::json mine = {{"process", boot.rank()}, {"host", hostName()}, {"ranks", myRanks}};
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& s : boot.allGatherStrings(jsonText(mine))) {
    const auto p = nlohmann::json::parse(s);
    for (auto r : p["ranks"]) {
      r["process"] = p["process"];
      r["host"] = p["host"];
      ranks.push_back(r);
    }
  }
  std::sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a["rank"] < b["rank"]; });
  layouts.push_back({{"step", step},
                     {"backend", nameOf(backend)},
                     {"size", worldSize},
                     {"gpus_per_process", gpusPerProcess},
                     {"ranks", ranks}});
}

namespace {
// The stream a run's error lines name: a variant's run (bench/run/transports.h) streams into a part that its parent
// merges, then removes, so they name the merged result, where its records are once every variant has run (every path
// printed exists afterwards).
std::string streamNamedInErrors(const std::string& stream) {
  const char* merged = std::getenv(kMergedIntoVariable);
  return merged && *merged && !stream.empty() ? std::string(merged) : stream;
}
}  // namespace

std::unique_ptr<RunSession> RunSession::open(BootstrapKind bootstrap, bool wantMpi, const std::string& subcommand,
                                             const std::vector<std::string>& argv, const nlohmann::json& config,
                                             const std::string& jsonPath, double timeoutS) {
  std::unique_ptr<RunSession> s(new RunSession());
  // Until the bootstrap exists, the rank and world are the launcher's (the bootstrap then checks they agree).
  const Launch launch = detectLaunch();
  activity::setIdentity(launch.rank, std::max(1, launch.size), hostName());
  activity::installSignalHandlers();
  activity::set("meeting the other processes (bootstrap)");
  s->setupWatchdog_ = std::make_unique<Watchdog>(timeoutS, launch.rank, endAllRanksOnTimeout(timeoutS, [p = s.get()](int code) {
                                                   if (Bootstrap* b = p->abortThrough_.load()) b->abortAll(code);
                                                   abortWithoutBootstrap(code);
                                                 }));
  s->setupWatchdog_->arm();
  {
    const heartbeat::WaitingForPeers waiting;
    s->boot_ = makeBootstrap(bootstrap, wantMpi, launch);
  }
  Bootstrap& boot = *s->boot_;
  s->abortThrough_.store(&boot);
  activity::setIdentity(boot.rank(), boot.size(), hostName());
  if (boot.size() > 1) {
    s->census_ = std::make_unique<PeerCensus>(boot, hostName());
    ending::openLifelines(boot, s->census_->mine());
  }
  activity::set("gathering the run's metadata");
  s->meta_ = makeRunMetadata(boot, launch, subcommand, argv, config);
  double interval = 0;
  collectively(boot, [&] { interval = telemetryIntervalFromEnvironment(); });
  // Every process's host and pid: the first process of a host samples it, and the CPU time of the run's
  // processes on it is the run's own (the rest is contention from outside the run).
  const std::string me = fmt::format("{} {}", ::getpid(), hostName());
  const std::vector<std::string> places = boot.size() > 1 ? boot.allGatherStrings(me) : std::vector<std::string>{me};
  std::vector<int> localPids;
  int firstLocal = -1;
  for (std::size_t p = 0; p < places.size(); ++p) {
    const std::size_t space = places[p].find(' ');
    if (places[p].substr(space + 1) != hostName()) continue;
    localPids.push_back(std::stoi(places[p].substr(0, space)));
    if (firstLocal < 0) firstLocal = static_cast<int>(p);
  }
  if (interval > 0 && firstLocal == boot.rank()) s->telemetry_ = std::make_unique<TelemetrySampler>(interval, localPids);
  // The compute threads: decided once the processes on this host are known, before any measuring.
  ComputeThreads threads;
  collectively(boot, [&] { threads = decideComputeThreads(static_cast<int>(localPids.size())); });
  applyComputeThreads(threads);
  s->meta_["threads"] = threads.toJson();
  collectively(boot, [&] {
    if (boot.rank() == 0) s->writer_ = std::make_unique<ResultWriter>(jsonPath);
  });
  const std::string stream = jsonPath.empty() ? "" : ResultWriter::streamPathFor(jsonPath);
  activity::setStream(streamNamedInErrors(stream), s->writer_ != nullptr);
  if (s->writer_) s->writer_->begin(s->meta_);
  s->ctx_ = std::make_unique<RunContext>(RunContext{boot, s->writer_.get(), stream, nlohmann::json::array(), "", &s->meta_});
  s->ctx_->keepTelemetry = [p = s.get()] { p->keepOwnTelemetry(); };
  activity::set("");
  return s;
}

RunSession::~RunSession() {
  setupWatchdog_.reset();  // before anything it could abort through goes
  if (std::uncaught_exceptions() > 0 && !activity::errorWasReported()) {
    // A failure that the processes did not agree on (collectively): the others may be inside a collective, or gone,
    // and MPI_Finalize would wait for them. bench/main.cpp ends this process (bench/failures/run_ending.h).
    if (boot_) boot_->abandon();
  } else if (!finished_) {
    ending::closing();  // a subcommand that returned without a document: its end is no failure
  }
  // The run failed before finish() after measuring something: process 0 keeps its own host's telemetry
  // beside those records (the others may be gone). A run that measured nothing leaves no files.
  if (writer_ && !writer_->records().empty()) {
    try {
      keepOwnTelemetry();
    } catch (const std::exception&) {  // the run's own error is the one to report
    }
  }
}

namespace {
// One line per host: what the CPU and GPUs did, and whether the clocks throttled.
void printTelemetry(const nlohmann::json& rec) {
  const nlohmann::json& s = rec["summary"];
  std::string line = fmt::format("# telemetry {}: {} sample(s) over {:.1f} s", rec["host"].get<std::string>(),
                                 rec["samples"].size(), s["duration_s"].get<double>());
  if (s["cpu_busy_fraction"].is_object())
    line += fmt::format(", CPU busy {:.0f}% median", 100 * s["cpu_busy_fraction"]["median"].get<double>());
  if (s["cpu_freq_mhz"].is_object()) line += fmt::format(" at {:.0f} MHz", s["cpu_freq_mhz"]["median"].get<double>());
  for (const auto& g : s["gpus"]) {
    line += fmt::format("; GPU {}", g["index"].get<int>());
    if (g["sm_clock_mhz"].is_object())
      line +=
          fmt::format(" SM {:.0f}-{:.0f} MHz", g["sm_clock_mhz"]["min"].get<double>(), g["sm_clock_mhz"]["max"].get<double>());
    if (g["power_w"].is_object()) line += fmt::format(", {:.0f} W max", g["power_w"]["max"].get<double>());
    if (g["temperature_c"].is_object()) line += fmt::format(", {:.0f} C max", g["temperature_c"]["max"].get<double>());
    if (g["throttled_samples"].get<int>() > 0)
      line += fmt::format(", THROTTLED in {} sample(s) ({})", g["throttled_samples"].get<int>(),
                          fmt::join(g["throttle_reasons"], ", "));
    if (g["low_clock_samples"].get<int>() > 0)
      line += fmt::format(", SM clock under {:.0f}% of its maximum while busy in {} sample(s)", 100 * kLowClockFraction,
                          g["low_clock_samples"].get<int>());
  }
  std::printf("%s\n", printable(line).c_str());  // GPU names and host names as read
}

void addTelemetry(ResultWriter& writer, const nlohmann::json& rec) {
  writer.add(rec);
  if (!writer.jsonPath().empty()) printTelemetry(rec);
}
}  // namespace

void RunSession::keepOwnTelemetry() {
  if (!telemetry_ || !writer_) return;
  const nlohmann::json sampled = telemetry_->stop();  // null when already kept
  if (sampled.is_null()) return;
  addTelemetry(*writer_, telemetryRecord(hostName(), boot_->rank(), sampled));
}

void RunSession::finish() {
  ending::closing();
  // Every host's telemetry to process 0 (collective: each process calls finish). Process 0 streams its
  // own host's first: the gather needs every process, and a run that lost one may never get past it.
  keepOwnTelemetry();
  activity::set("gathering the hosts' telemetry");
  nlohmann::json mine;
  if (telemetry_ && !writer_) mine = {{"host", hostName()}, {"process", boot_->rank()}, {"sampled", telemetry_->stop()}};
  telemetry_.reset();
  if (boot_->size() > 1)
    for (const std::string& s : boot_->allGatherStrings(jsonText(mine)))
      if (const nlohmann::json t = nlohmann::json::parse(s); writer_ && t.is_object())
        addTelemetry(*writer_, telemetryRecord(t["host"], t["process"], t["sampled"]));
  writeDocument();
}

void RunSession::finishAfterFailure() {
  keepOwnTelemetry();
  telemetry_.reset();
  writeDocument();
}

void RunSession::writeDocument() {
  finished_ = true;
  meta_["ended_at"] = isoTimeNow();
  meta_["layouts"] = ctx_->layouts;
  if (writer_ && !writer_->jsonPath().empty()) {
    writer_->finish(meta_);
    if (const char* merged = std::getenv(kMergedIntoVariable); merged && *merged)
      std::printf("#\n# results: this variant's records go into %s once every variant has run\n", printable(merged).c_str());
    else
      std::printf("#\n# results: %s (records streamed to %s)\n", printable(writer_->jsonPath()).c_str(),
                  printable(writer_->streamPath()).c_str());
  }
  std::fflush(stdout);
}

}  // namespace ts
