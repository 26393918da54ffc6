#include "bench/run/trace_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_text.h"
#include "base/terminal_text.h"
#include "comm/bootstrap.h"
#include "kernels/trace.h"
#ifdef TRAINSCOPE_HAVE_CUPTI
#include "kernels/cuda/cupti_activity.h"
#include "kernels/cuda/device_count.h"
#else
namespace ts::cuda {
class ActivityTrace {};  // a build without CUPTI has no device spans
}  // namespace ts::cuda
#endif

namespace ts {

namespace {
// Tracks (Chrome tids): the host's communication (1), CUDA runtime and driver calls (2), the host's main thread
// (kMainTrack), and one per device stream from kDeviceTrackBase on. Never 0: Perfetto reads tid 0 on a pid other than
// 0 as tid = pid, which put rank 1's main thread onto its communication one.
constexpr int kApiTrack = 2, kMainTrack = 3, kDeviceTrackBase = 100;

// Operations in flight together (a pipeline stage's sends, a bucket's all-reduce beside the next) overlap in time,
// and one thread's slices must nest for Perfetto and chrome://tracing: the communication track is split into
// lanes, tid 1 and then kCommLaneBase + k, each op on the first lane free when it starts.
constexpr int kCommLaneBase = 10;

// The tid of each event (sorted by track, then start): its track's, communication ones spread over lanes.
std::vector<int> threadIds(const std::vector<trace::Event>& sorted) {
  std::vector<int> tids;
  std::vector<double> laneEnds;  // per lane: when its last op ended
  for (const trace::Event& e : sorted) {
    if (e.track == trace::Track::kMain) {
      tids.push_back(kMainTrack);
      continue;
    }
    if (e.track != trace::Track::kCommunication) {
      tids.push_back(static_cast<int>(e.track));
      continue;
    }
    std::size_t lane = 0;
    while (lane < laneEnds.size() && laneEnds[lane] > e.startUs) ++lane;
    if (lane == laneEnds.size()) laneEnds.push_back(0);
    laneEnds[lane] = e.startUs + e.durationUs;
    // Past the lanes there is room for, the last one takes the rest (it may then overlap).
    tids.push_back(
        lane == 0 ? 1 : kCommLaneBase + static_cast<int>(std::min<std::size_t>(lane, kDeviceTrackBase - kCommLaneBase)) - 1);
  }
  return tids;
}

// The format of the files (reports/schema/trace-v2.schema.json), in their "trainscope" entry: v1 had our categories as `cat`.
constexpr const char* kTraceFormat = "trace-v2";

// A list of ranks as Kineto writes one ("[0, 1, 2]", a string: PyTorch's profiler formats it so).
std::string rankList(const std::vector<int>& ranks) { return fmt::format("[{}]", fmt::join(ranks, ", ")); }

// A collective's span names its group as Kineto does: name, description, global ranks, and a send's or receive's
// other end as a global rank.
void addGroupArgs(nlohmann::json& args, const std::vector<TraceGroup>& groups) {
  if (!args.contains("Collective name") || !args.contains("group")) return;
  const auto g = std::find_if(groups.begin(), groups.end(), [&](const TraceGroup& t) { return t.name == args["group"]; });
  if (g == groups.end()) return;
  args["Process Group Name"] = g->name;
  args["Process Group Description"] = g->desc;
  args["Process Group Ranks"] = rankList(g->ranks);
  if (!args.contains("peer")) return;
  const int peer = args["peer"].get<int>();
  if (peer < 0 || peer >= static_cast<int>(g->ranks.size())) return;
  args[args.value("Collective name", "") == "send" ? "Dst Rank" : "Src Rank"] = g->ranks[static_cast<std::size_t>(peer)];
}

// A span's name in the file: a training step's as PyTorch's profiler names it ("ProfilerStep#3", which Holistic
// Trace Analysis finds iterations by), every other span's as recorded ("step 3" stays so in NVTX).
std::string spanName(const trace::Event& e) {
  if (e.role == trace::Role::kStep && e.name.rfind("step ", 0) == 0) return "ProfilerStep#" + e.name.substr(5);
  return e.name;
}
}  // namespace

// The ranges we open around work are record_function's ("user_annotation"), the work the host does an op ("cpu_op": a
// CPU-only PyTorch trace's compute is aten ops, and its collectives, gloo:all_reduce from start to end, are cpu_ops too).
std::string_view kinetoCategory(trace::Role role) {
  using R = trace::Role;
  switch (role) {
    case R::kStep:
    case R::kPhase:
    case R::kWait:
      return "user_annotation";
    case R::kCompute:
    case R::kCommunication:
      return "cpu_op";
    case R::kKernel:
      return "kernel";
    case R::kMemcpy:
      return "gpu_memcpy";
    case R::kMemset:
      return "gpu_memset";
    case R::kCudaRuntime:
      return "cuda_runtime";
    case R::kCudaDriver:
      return "cuda_driver";
  }
  throw Error("internal: a trace role with no Kineto category");
}

#ifdef TRAINSCOPE_HAVE_CUPTI
namespace {
// CUPTI's spans as trace events: device work on a track per stream, runtime calls on track 2.
std::vector<trace::Event> deviceEvents(const std::vector<cuda::DeviceSpan>& spans) {
  std::vector<trace::Event> out;
  for (const auto& s : spans) {
    using K = cuda::DeviceSpan::Kind;
    trace::Event e;
    e.name = s.name;
    const bool api = s.kind == K::kRuntimeApi || s.kind == K::kDriverApi;
    e.role = s.kind == K::kKernel      ? trace::Role::kKernel
             : s.kind == K::kMemcpy    ? trace::Role::kMemcpy
             : s.kind == K::kMemset    ? trace::Role::kMemset
             : s.kind == K::kDriverApi ? trace::Role::kCudaDriver
                                       : trace::Role::kCudaRuntime;
    e.startUs = s.startUs;
    e.durationUs = s.endUs - s.startUs;
    e.track = static_cast<trace::Track>(api ? kApiTrack : kDeviceTrackBase + static_cast<int>(s.stream));
    e.args = {{"correlation", s.correlation}};
    if (api) {
      e.args["thread"] = s.thread;
    } else {
      e.args["device"] = s.device;
      e.args["stream"] = s.stream;
      if (!s.launch.empty()) e.args["launch"] = s.launch;  // the runtime (or driver) call, same correlation id
    }
    if (s.kind == K::kKernel) {
      e.args["grid"] = {s.grid[0], s.grid[1], s.grid[2]};
      e.args["block"] = {s.block[0], s.block[1], s.block[2]};
    }
    if (s.kind == K::kMemcpy || s.kind == K::kMemset) e.args["bytes"] = s.bytes;
    out.push_back(std::move(e));
  }
  return out;
}
}  // namespace
#endif

TraceFiles::TraceFiles(Bootstrap& boot, std::string dir, int worldSize) : boot_(boot), dir_(std::move(dir)), world_(worldSize) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw UsageError(fmt::format("--trace {}: {}", dir_, ec.message()));
#ifdef TRAINSCOPE_HAVE_CUPTI
  if (cuda::usableDeviceCount() > 0) {
    try {
      device_ = std::make_unique<cuda::ActivityTrace>();
    } catch (const std::exception& e) {  // another profiler holds CUPTI, or no permission: host spans only
      std::fprintf(stderr, "trainscope: warning: --trace %s: no kernel-level spans: %s\n", printable(dir_).c_str(), e.what());
    }
  }
#endif
  boot_.barrier();
  originUs_ = trace::nowUs();
  trace::take();
  trace::enable(true);
}

TraceFiles::~TraceFiles() = default;

namespace {

// Every span this process recorded, with (on a GPU with CUPTI) the device's, which `device` hands over as it ends;
// the device clock's offset and what CUPTI dropped go into `clock`.
std::vector<trace::Event> takeEvents([[maybe_unused]] std::unique_ptr<cuda::ActivityTrace>& device,
                                     [[maybe_unused]] nlohmann::json& clock) {
  std::vector<trace::Event> recorded = trace::take();
#ifdef TRAINSCOPE_HAVE_CUPTI
  std::vector<trace::Event> spans;
  if (device) {
    spans = deviceEvents(device->finish());
    clock["device_offset_us"] = device->clockOffsetUs();
    clock["device_offset_uncertainty_us"] = device->clockUncertaintyUs();
    clock["dropped_device_records"] = device->droppedRecords();
    clock["incomplete_device_records"] = device->incompleteRecords();
    device.reset();
  }
  recorded.insert(recorded.end(), spans.begin(), spans.end());
#endif
  return recorded;
}

// The rank's process and each of its tracks, named and ordered (Chrome trace metadata events).
nlohmann::json trackNames(int rank, const std::vector<int>& tids) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", rank},
                    {"tid", kMainTrack},
                    {"args", {{"name", fmt::format("rank {}", rank)}}}});
  events.push_back(
      {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"tid", kMainTrack}, {"args", {{"sort_index", rank}}}});
  std::set<int> tracks = {kMainTrack, 1};
  tracks.insert(tids.begin(), tids.end());
  for (int t : tracks) {
    const std::string name = t == kMainTrack                              ? std::string(kMainThreadName)
                             : t == 1                                     ? "communication"
                             : t >= kCommLaneBase && t < kDeviceTrackBase ? fmt::format("communication {}", t - kCommLaneBase + 2)
                             : t == kApiTrack                             ? "cuda runtime"
                                                                          : fmt::format("gpu stream {}", t - kDeviceTrackBase);
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", t}, {"args", {{"name", name}}}});
    // The main thread first, as when it was tid 0; the others in tid order.
    events.push_back({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", rank},
                      {"tid", t},
                      {"args", {{"sort_index", t == kMainTrack ? 0 : t}}}});
  }
  return events;
}

// The spans as complete events ("X") on their tracks, times from `originUs`; a collective's names its group.
void addSpans(nlohmann::json& events, const std::vector<trace::Event>& recorded, const std::vector<int>& tids,
              const std::vector<TraceGroup>& groups, int rank, double originUs) {
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    const trace::Event& e = recorded[i];
    nlohmann::json args = e.args.is_null() ? nlohmann::json::object() : e.args;
    args["role"] = nameOf(e.role);
    addGroupArgs(args, groups);
    events.push_back({{"ph", "X"},
                      {"name", spanName(e)},
                      {"cat", kinetoCategory(e.role)},
                      {"ts", e.startUs - originUs},
                      {"dur", e.durationUs},
                      {"pid", rank},
                      {"tid", tids[i]},
                      {"args", std::move(args)}});
  }
}

// Flow arrows from each CUDA runtime call to the device work it launched (same correlation id), as Kineto names them.
void addLaunchFlows(nlohmann::json& events, const std::vector<trace::Event>& recorded, int rank, double originUs) {
  std::map<std::uint64_t, const trace::Event*> launches;
  for (const trace::Event& e : recorded)
    if (static_cast<int>(e.track) == kApiTrack) launches[e.args.at("correlation").get<std::uint64_t>()] = &e;
  for (const trace::Event& e : recorded) {
    if (static_cast<int>(e.track) < kDeviceTrackBase) continue;
    const auto it = launches.find(e.args.at("correlation").get<std::uint64_t>());
    if (it == launches.end()) continue;
    // An integer: Perfetto drops a flow whose id is a float (flow_invalid_id).
    const std::uint64_t id = it->first;
    events.push_back({{"ph", "s"},
                      {"name", "ac2g"},
                      {"cat", "ac2g"},
                      {"id", id},
                      {"pid", rank},
                      {"tid", kApiTrack},
                      {"ts", it->second->startUs - originUs}});
    events.push_back({{"ph", "f"},
                      {"bp", "e"},
                      {"name", "ac2g"},
                      {"cat", "ac2g"},
                      {"id", id},
                      {"pid", rank},
                      {"tid", static_cast<int>(e.track)},
                      {"ts", e.startUs - originUs}});
  }
}

// distributedInfo as Kineto writes it: the backend, and the process groups this rank is in.
nlohmann::json distributedInfo(int rank, int world, const std::vector<TraceGroup>& groups, std::optional<BackendKind> backend) {
  nlohmann::json pgConfig = nlohmann::json::array();
  for (const TraceGroup& g : groups)
    pgConfig.push_back({{"pg_name", g.name}, {"pg_desc", g.desc}, {"pg_size", g.ranks.size()}, {"ranks", rankList(g.ranks)}});
  nlohmann::json info = {{"rank", rank}, {"world_size", world}, {"pg_count", pgConfig.size()}, {"pg_config", pgConfig}};
  if (backend) info["backend"] = nameOf(*backend);
  return info;
}

// Process 0: every rank's events (`all`, each rank's as JSON text) on one time axis, DIR/merged/merged.json.
void writeMerged(const std::string& dir, const std::vector<std::string>& all, const std::string& what,
                 const nlohmann::json& clock, int world) {
  nlohmann::json merged = nlohmann::json::array();
  for (const auto& s : all)
    for (auto& e : nlohmann::json::parse(s)) merged.push_back(std::move(e));
  const nlohmann::json doc = {{"traceEvents", merged},
                              {"distributedInfo", {{"world_size", world}}},
                              {"trainscope", {{"format", kTraceFormat}, {"what", what}, {"clock", clock}, {"ranks", world}}}};
  // In a directory of its own: Holistic Trace Analysis loads every JSON file of DIR as one rank's trace and
  // stops at one without distributedInfo.rank, which the merged view (every rank) has not.
  const std::filesystem::path mergedDir = std::filesystem::path(dir) / "merged";
  std::filesystem::create_directories(mergedDir);
  writeFileAtomically((mergedDir / "merged.json").string(), jsonText(doc));
}

}  // namespace

void TraceFiles::finish(const std::string& what, const nlohmann::json& about, const std::vector<TraceGroup>& groups,
                        std::optional<BackendKind> backend) {
  trace::enable(false);
  const int rank = boot_.rank();
  nlohmann::json clock = {{"method", "barrier"},
                          {"note",
                           "times are microseconds since a barrier every rank left together; "
                           "aligned to within that barrier's exit skew"}};
  std::vector<trace::Event> recorded = takeEvents(device_, clock);
  // In time order on each track, a parent before the spans it contains (a step before its phases).
  std::stable_sort(recorded.begin(), recorded.end(), [](const trace::Event& a, const trace::Event& b) {
    if (a.track != b.track) return a.track < b.track;
    if (a.startUs != b.startUs) return a.startUs < b.startUs;
    return a.durationUs > b.durationUs;
  });
  const std::vector<int> tids = threadIds(recorded);
  nlohmann::json events = trackNames(rank, tids);
  std::vector<TraceGroup> allGroups = groups;
  std::vector<int> everyRank(static_cast<std::size_t>(world_));
  std::iota(everyRank.begin(), everyRank.end(), 0);
  allGroups.push_back({"world", "default_pg", everyRank});
  addSpans(events, recorded, tids, allGroups, rank, originUs_);
  addLaunchFlows(events, recorded, rank, originUs_);
  // No displayTimeUnit: Perfetto v4-v21 read every ts and dur in the unit it names when it opens the file.
  const nlohmann::json mine = {{"traceEvents", events},
                               {"distributedInfo", distributedInfo(rank, world_, allGroups, backend)},
                               {"trainscope", {{"format", kTraceFormat}, {"what", what}, {"clock", clock}, {"about", about}}}};
  // Python's separators ("rank": 1): HTA finds each file's rank with a regex on its text, and without the space took
  // every file for rank 0. distributedInfo comes before traceEvents (keys sorted), where HTA's ijson reader stops.
  writeFileAtomically((std::filesystem::path(dir_) / fmt::format("rank-{}.json", rank)).string(), jsonTextSpaced(mine));
  const std::vector<std::string> all =
      world_ > 1 ? boot_.allGatherStrings(jsonText(events)) : std::vector<std::string>{jsonText(events)};
  if (rank != 0) return;
  writeMerged(dir_, all, what, clock, world_);
}

}  // namespace ts
