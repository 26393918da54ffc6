#include "bench/run_session.h"

#include <cstdio>

#include <fmt/format.h>

#include "bench/activity.h"
#include "bench/agreement.h"
#include "bench/inventory.h"
#include "bench/result_writer.h"
#include "bench/run_metadata.h"

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
  collectively(boot, [&] {
    if (boot.rank() == 0) s->writer_ = std::make_unique<ResultWriter>(jsonPath);
  });
  const std::string stream = jsonPath.empty() ? "" : ResultWriter::streamPathFor(jsonPath);
  activity::setStreamPath(stream);
  if (s->writer_) s->writer_->begin(s->meta_);
  s->ctx_ = std::make_unique<RunContext>(RunContext{boot, s->writer_.get(), stream, nlohmann::json::array(), "", &s->meta_});
  return s;
}

RunSession::~RunSession() = default;

void RunSession::finish() {
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
