#include "bench/trace_files.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "comm/bootstrap.h"
#include "kernels/trace.h"

namespace ts {

TraceFiles::TraceFiles(Bootstrap& boot, std::string dir, int worldSize) : boot_(boot), dir_(std::move(dir)), world_(worldSize) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw UsageError(fmt::format("--trace {}: {}", dir_, ec.message()));
  boot_.barrier();
  originUs_ = trace::nowUs();
  trace::take();
  trace::enable(true);
}

void TraceFiles::finish(const std::string& what, const nlohmann::json& about) {
  trace::enable(false);
  const int rank = boot_.rank();
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"tid", 0}, {"args", {{"name", fmt::format("rank {}", rank)}}}});
  events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"tid", 0}, {"args", {{"sort_index", rank}}}});
  for (int t = 0; t < 2; ++t)
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", t}, {"args", {{"name", t == 0 ? "main" : "communication"}}}});
  // In time order on each track, a parent before the spans it contains (a step before its phases).
  std::vector<trace::Event> recorded = trace::take();
  std::stable_sort(recorded.begin(), recorded.end(), [](const trace::Event& a, const trace::Event& b) {
    if (a.track != b.track) return a.track < b.track;
    if (a.startUs != b.startUs) return a.startUs < b.startUs;
    return a.durationUs > b.durationUs;
  });
  for (const trace::Event& e : recorded) {
    nlohmann::json j = {{"ph", "X"}, {"name", e.name}, {"cat", e.category}, {"ts", e.startUs - originUs_}, {"dur", e.durationUs},
                        {"pid", rank}, {"tid", static_cast<int>(e.track)}};
    if (!e.args.is_null()) j["args"] = e.args;
    events.push_back(std::move(j));
  }
  const nlohmann::json clock = {{"method", "barrier"}, {"note", "times are microseconds since a barrier every rank left together; "
                                                               "aligned to within that barrier's exit skew"}};
  const nlohmann::json mine = {{"traceEvents", events},
                               {"displayTimeUnit", "ms"},
                               {"distributedInfo", {{"rank", rank}, {"world_size", world_}}},
                               {"trainscope", {{"what", what}, {"clock", clock}, {"about", about}}}};
  writeFileAtomically((std::filesystem::path(dir_) / fmt::format("rank-{}.json", rank)).string(), mine.dump());
  const std::vector<std::string> all = world_ > 1 ? boot_.allGatherStrings(events.dump()) : std::vector<std::string>{events.dump()};
  if (rank != 0) return;
  nlohmann::json merged = nlohmann::json::array();
  for (const auto& s : all)
    for (auto& e : nlohmann::json::parse(s)) merged.push_back(std::move(e));
  const nlohmann::json doc = {{"traceEvents", merged},
                              {"displayTimeUnit", "ms"},
                              {"distributedInfo", {{"world_size", world_}}},
                              {"trainscope", {{"what", what}, {"clock", clock}, {"ranks", world_}}}};
  writeFileAtomically((std::filesystem::path(dir_) / "merged.json").string(), doc.dump());
}

}  // namespace ts
