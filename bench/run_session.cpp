#include "bench/run_session.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "bench/activity.h"
#include "bench/agreement.h"
#include "bench/inventory.h"
#include "bench/result_writer.h"
#include "bench/run_metadata.h"
#include "bench/telemetry.h"

namespace ts {

void RunContext::addLayout(const std::string& step, const std::string& backend, int worldSize, int gpusPerProcess,
                           const nlohmann::json& myRanks) {
  nlohmann::json mine = {{"process", boot.rank()}, {"host", hostName()}, {"ranks", myRanks}};
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& s : boot.allGatherStrings(mine.dump())) {
    const auto p = nlohmann::json::parse(s);
    for (auto r : p["ranks"]) {
      r["process"] = p["process"];
      r["host"] = p["host"];
      ranks.push_back(r);
    }
  }
  std::sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a["rank"] < b["rank"]; });
  layouts.push_back({{"step", step}, {"backend", backend}, {"size", worldSize}, {"gpus_per_process", gpusPerProcess}, {"ranks", ranks}});
}

std::unique_ptr<RunSession> RunSession::open(BootstrapKind bootstrap, bool wantMpi, const std::string& subcommand,
                                             const std::vector<std::string>& argv, const nlohmann::json& config,
                                             const std::string& jsonPath) {
  std::unique_ptr<RunSession> s(new RunSession());
  s->boot_ = makeBootstrap(bootstrap, wantMpi);
  Bootstrap& boot = *s->boot_;
  activity::setIdentity(boot.rank(), boot.size(), hostName());
  activity::installSignalHandlers();
  s->meta_ = makeRunMetadata(boot, subcommand, argv, config);
  double interval = 0;
  collectively(boot, [&] { interval = telemetryIntervalFromEnvironment(); });
  const std::vector<std::string> hosts = boot.size() > 1 ? boot.allGatherStrings(hostName()) : std::vector<std::string>{hostName()};
  const bool firstOnHost = std::find(hosts.begin(), hosts.end(), hostName()) - hosts.begin() == boot.rank();
  if (interval > 0 && firstOnHost) s->telemetry_ = std::make_unique<TelemetrySampler>(interval);
  collectively(boot, [&] {
    if (boot.rank() == 0) s->writer_ = std::make_unique<ResultWriter>(jsonPath);
  });
  const std::string stream = jsonPath.empty() ? "" : ResultWriter::streamPathFor(jsonPath);
  activity::setStreamPath(stream);
  if (s->writer_) s->writer_->begin(s->meta_);
  s->ctx_ = std::make_unique<RunContext>(RunContext{boot, s->writer_.get(), stream, nlohmann::json::array(), "", &s->meta_});
  return s;
}

RunSession::~RunSession() {
  // The run failed before finish() after measuring something: process 0 keeps its own host's telemetry
  // beside those records (the others may be gone). A run that measured nothing leaves no files.
  if (telemetry_ && writer_ && !writer_->records().empty()) {
    try {
      writer_->add(telemetryRecord(hostName(), 0, telemetry_->stop()));
    } catch (const std::exception&) {  // the run's own error is the one to report
    }
  }
}

namespace {
// One line per host: what the CPU and GPUs did, and whether the clocks throttled.
void printTelemetry(const nlohmann::json& rec) {
  const nlohmann::json& s = rec["summary"];
  std::string line = fmt::format("# telemetry {}: {} sample(s) over {:.1f} s", rec["host"].get<std::string>(), rec["samples"].size(),
                                 s["duration_s"].get<double>());
  if (s["cpu_busy_fraction"].is_object()) line += fmt::format(", CPU busy {:.0f}% median", 100 * s["cpu_busy_fraction"]["median"].get<double>());
  if (s["cpu_freq_mhz"].is_object()) line += fmt::format(" at {:.0f} MHz", s["cpu_freq_mhz"]["median"].get<double>());
  for (const auto& g : s["gpus"]) {
    line += fmt::format("; GPU {}", g["index"].get<int>());
    if (g["sm_clock_mhz"].is_object()) line += fmt::format(" SM {:.0f}-{:.0f} MHz", g["sm_clock_mhz"]["min"].get<double>(), g["sm_clock_mhz"]["max"].get<double>());
    if (g["power_w"].is_object()) line += fmt::format(", {:.0f} W max", g["power_w"]["max"].get<double>());
    if (g["temperature_c"].is_object()) line += fmt::format(", {:.0f} C max", g["temperature_c"]["max"].get<double>());
    if (g["throttled_samples"].get<int>() > 0) line += fmt::format(", THROTTLED in {} sample(s) ({})", g["throttled_samples"].get<int>(), fmt::join(g["throttle_reasons"], ", "));
  }
  std::printf("%s\n", line.c_str());
}
}  // namespace

void RunSession::finish() {
  // Every host's telemetry to process 0 (collective: each process calls finish).
  nlohmann::json mine;
  if (telemetry_) mine = {{"host", hostName()}, {"process", boot_->rank()}, {"sampled", telemetry_->stop()}};
  telemetry_.reset();
  const std::vector<std::string> all = boot_->size() > 1 ? boot_->allGatherStrings(mine.dump()) : std::vector<std::string>{mine.dump()};
  if (writer_) {
    for (const std::string& s : all) {
      const nlohmann::json t = nlohmann::json::parse(s);
      if (t.is_null()) continue;
      nlohmann::json rec = telemetryRecord(t["host"], t["process"], t["sampled"]);
      writer_->add(rec);
      if (!writer_->jsonPath().empty()) printTelemetry(rec);
    }
  }
  meta_["ended_at"] = isoTimeNow();
  meta_["layouts"] = ctx_->layouts;
  if (writer_ && !writer_->jsonPath().empty()) {
    writer_->finish(meta_);
    std::printf("#\n# results: %s (records streamed to %s)\n", writer_->jsonPath().c_str(), writer_->streamPath().c_str());
  }
  std::fflush(stdout);
}

}  // namespace ts

namespace ts {

void printInventory(RunContext& ctx) {
  if (ctx.boot.rank() != 0) return;
  const nlohmann::json& meta = *ctx.metadata;
  for (const auto& host : meta["hosts"]) {
    std::printf("%s", formatInventory(host, host["versions"], meta["environment"]).c_str());
    if (meta["hosts"].size() > 1) std::printf("\n");
  }
  std::fflush(stdout);
}

}  // namespace ts
