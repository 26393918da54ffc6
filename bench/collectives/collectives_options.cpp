#include "bench/collectives/collectives_options.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "base/error.h"
#include "base/split.h"
#include "base/units.h"
#include "base/user_paths.h"
#include "workloads/device_spec.h"

namespace ts {

namespace {

// The sweep's lists: --ops, --dtype and --redop, each `all` or a comma list.
void resolveLists(const CollectivesArgs& raw, CollectivesOptions& o) {
  o.ops.clear();
  o.allOps = raw.ops == "all";
  if (o.allOps)
    o.ops = allCollectives();
  else
    for (const auto& name : splitNonEmpty(raw.ops, ',')) o.ops.push_back(&findCollective(name));
  o.dtypes.clear();
  if (raw.dtype == "all")
    o.dtypes = allDTypes();
  else
    for (const auto& name : splitNonEmpty(raw.dtype, ',')) o.dtypes.push_back(parseDType(name));
  o.redops.clear();
  if (raw.redop == "all")
    o.redops = allRedOps();
  else
    for (const auto& name : splitNonEmpty(raw.redop, ',')) o.redops.push_back(parseRedOp(name));
}

}  // namespace

CollectivesOptions resolveCollectivesArgs(const CollectivesArgs& raw) {
  CollectivesOptions o = raw.opts;
  applyNcclTestsFlags(raw.ncclTests, o);
  const wl::DeviceSpec device = wl::parseDeviceSpec(raw.device);
  if (!device.cuda()) throw UsageError("--device cpu: collectives on the CPU are --backend mpi");
  o.gpus.first = device.index;
  resolveLists(raw, o);
  o.minBytes = parseBytes(raw.minBytes, "-b/--min-bytes");
  o.maxBytes = parseBytes(raw.maxBytes, "-e/--max-bytes");
  o.stepBytes = parseBytes(raw.stepBytes, "-i/--step-bytes");
  o.largeBytes = parseBytes(raw.largeBytes, "--large-bytes");
  o.alltoallvCounts = parseAlltoallvCounts(raw.alltoallvCounts);
  validate(o);
  return o;
}

namespace {

// --issue beyond blocking: MPI's alone. Refused elsewhere rather than ignored: NCCL has one form of each call, and
// records that said "nonblocking" of the same measurement as "blocking" would put two series of one cost in a
// calibration. The ops without a nonblocking MPI call are measured blocking only (both), or left out (nonblocking).
void fitOpsToIssue(CollectivesOptions& o, BackendKind backend) {
  o.opsBlockingOnly.clear();
  if (o.issue == IssueChoice::kBlocking) return;
  if (backend != BackendKind::kMpi)
    throw UsageError(
        fmt::format("--issue {}: applies to --backend mpi; the {} backend has one form of each call (every call "
                    "is queued on its stream and returns at once, and the sweep times it to completion)",
                    nameOf(o.issue), nameOf(backend)));
  std::vector<const Collective*> kept;
  for (const Collective* c : o.ops) {
    if (!c->startsOnMpi()) {
      o.opsBlockingOnly.push_back(c);
      if (o.issue == IssueChoice::kNonblocking) {
        if (!o.allOps)
          throw UsageError(
              fmt::format("--ops {}: --issue nonblocking: it has no nonblocking MPI call here (--issue blocking "
                          "or both measure its blocking one)",
                          c->name()));
        continue;
      }
    }
    kept.push_back(c);
  }
  o.ops = kept;
}

}  // namespace

void fitOpsToBackend(CollectivesOptions& o, BackendKind backend) {
  std::vector<const Collective*> kept;
  for (const Collective* c : o.ops) {
    if (c->runsOn(backend)) {
      kept.push_back(c);
      continue;
    }
    if (!o.allOps) throw UsageError(fmt::format("--ops {}: {}", c->name(), c->whyNotOn(backend)));
    o.opsLeftOut.push_back(c);
  }
  if (kept.empty()) throw UsageError(fmt::format("--ops all: the {} backend runs none of the collectives", nameOf(backend)));
  o.ops = kept;
  fitOpsToIssue(o, backend);
  // Cold on NCCL would write the flush inside the events that time the call (the loop queues everything between them).
  if (o.cache != CacheChoice::kHot && backend != BackendKind::kMpi)
    throw UsageError(
        fmt::format("--cache {}: applies to --backend mpi (the {} backend's timed events would enclose the "
                    "cache flush queued before each call)",
                    nameOf(o.cache), nameOf(backend)));
}

namespace {

std::uint64_t wholeElements(std::uint64_t bytes, std::uint64_t elt) { return (bytes + elt - 1) / elt * elt; }

// The size after `s`, or nothing past -e. Rounded up to whole elements, as nccl-tests does, and at least
// one element more, so that a factor near 1 (8 B x 1.1) still moves on instead of ending the sweep.
std::optional<std::uint64_t> nextSize(const CollectivesOptions& o, std::uint64_t s, std::uint64_t elt) {
  std::uint64_t next = 0;
  if (o.stepBytes) {
    if (o.stepBytes > o.maxBytes - s) return std::nullopt;
    next = wholeElements(s + o.stepBytes, elt);
  } else {
    const double target = static_cast<double>(s) * o.stepFactor;
    if (!(target <= static_cast<double>(o.maxBytes))) return std::nullopt;
    // The factor is a decimal as typed (1.1): a product a rounding error above a whole element is that
    // element, not the next one.
    const double elements = target / static_cast<double>(elt) * (1 - 4 * std::numeric_limits<double>::epsilon());
    next = static_cast<std::uint64_t>(std::ceil(elements)) * elt;
  }
  next = std::max(next, s + elt);
  if (next > o.maxBytes) return std::nullopt;
  return next;
}

}  // namespace

std::vector<std::uint64_t> sweepSizes(const CollectivesOptions& o, std::size_t eltSize) {
  constexpr std::size_t kMaxSizes = 10000;
  std::vector<std::uint64_t> sizes;
  for (std::optional<std::uint64_t> s = wholeElements(o.minBytes, eltSize); s && *s <= o.maxBytes; s = nextSize(o, *s, eltSize)) {
    sizes.push_back(*s);
    if (sizes.size() > kMaxSizes)
      throw UsageError(
          fmt::format("the sweep from -b {} to -e {} has more than {} sizes; raise -f/--step-factor or -i/--step-bytes",
                      o.minBytes, o.maxBytes, kMaxSizes));
  }
  return sizes;
}

std::vector<CollectiveLayout> sweepLayouts(const Collective& c, const std::vector<std::uint64_t>& sizes, std::size_t eltSize,
                                           int nranks, const ExchangeMatrix* exchange) {
  std::vector<CollectiveLayout> out;
  for (std::uint64_t bytes : sizes) {
    const CollectiveLayout lay = c.layout(bytes, eltSize, nranks, exchange);
    // The op rounds a size down to whole elements per rank: one too small for an element each, or one
    // that rounds down to the size before, adds nothing.
    if (lay.count == 0 || (!out.empty() && lay.bytes <= out.back().bytes)) continue;
    out.push_back(lay);
  }
  return out;
}

IterationCounts iterationsAt(const CollectivesOptions& o, std::uint64_t bytes) {
  if (o.largeBytes > 0 && bytes >= o.largeBytes) return {o.largeWarmup, o.largeIters};
  return {o.warmup, o.iters};
}

void validate(const CollectivesOptions& o) {
  if (o.ops.empty()) throw UsageError("--ops: no collective given");
  if (o.minBytes == 0) throw UsageError("-b/--min-bytes must be at least 1 byte");
  if (o.minBytes > o.maxBytes)
    throw UsageError(
        fmt::format("-b/--min-bytes ({}) is larger than -e/--max-bytes ({})", formatBytes(o.minBytes), formatBytes(o.maxBytes)));
  if (!o.stepBytes && !(o.stepFactor > 1.0))
    throw UsageError(fmt::format("-f/--step-factor must be greater than 1 (got {})", o.stepFactor));
  if (o.iters < 1) throw UsageError("-n/--iters must be at least 1");
  if (o.trials < 1) throw UsageError("--trials must be at least 1");
  if (o.warmup < 0) throw UsageError("-w/--warmup cannot be negative");
  if (o.root < 0) throw UsageError(fmt::format("-r/--root {} is not a rank", o.root));
  if (o.graph < 0) throw UsageError("-G/--graph cannot be negative");
  if (o.timeoutS < 0) throw UsageError("--timeout cannot be negative");
  if (o.gpus.perProcess < 0) throw UsageError("--gpus-per-process cannot be negative");
  if (o.dtypes.empty()) throw UsageError("-d/--dtype: no dtype given");
  if (o.redops.empty()) throw UsageError("-o/--redop: no reduction given");
  if (!o.traceDir.empty()) checkOutputDirectory("--trace", o.traceDir);
  if (o.alltoallvCounts.kind != AlltoallvCountsKind::kUniform &&
      std::none_of(o.ops.begin(), o.ops.end(), [](const Collective* c) { return c->perPairCounts(); }))
    throw UsageError(
        fmt::format("--alltoallv-counts {}: applies to alltoallv, which --ops leaves out", spelled(o.alltoallvCounts)));
  // The smallest element gives the most sizes: the bound on the sweep's length holds for every dtype.
  std::size_t smallest = dtypeSize(o.dtypes.front());
  for (DType t : o.dtypes) smallest = std::min(smallest, dtypeSize(t));
  sweepSizes(o, smallest);
}

nlohmann::json toJson(const CollectivesOptions& o) {
  nlohmann::json ops = nlohmann::json::array(), dtypes = nlohmann::json::array(), redops = nlohmann::json::array(),
                 mpiCalls = nlohmann::json::array(), issues = nlohmann::json::array(), caches = nlohmann::json::array();
  for (auto* c : o.ops) ops.push_back(std::string(c->name()));
  for (auto t : o.dtypes) dtypes.push_back(std::string(dtypeName(t)));
  for (auto r : o.redops) redops.push_back(std::string(redOpName(r)));
  for (auto m : mpiReduceScatterCalls(o.mpiReduceScatter)) mpiCalls.push_back(std::string(nameOf(m)));
  for (auto k : issueKinds(o.issue)) issues.push_back(std::string(nameOf(k)));
  for (auto k : cacheStates(o.cache)) caches.push_back(std::string(nameOf(k)));
  nlohmann::json j = o.given;
  j["resolved"] = {{"backend", nameOf(o.backend)},
                   {"gpus_per_process", o.gpus.perProcess},
                   {"device", o.gpus.first < 0 ? std::string("cuda") : fmt::format("cuda:{}", o.gpus.first)},
                   {"ops", ops},
                   {"dtypes", dtypes},
                   {"redops", redops},
                   {"min_bytes", o.minBytes},
                   {"max_bytes", o.maxBytes},
                   {"step_bytes", o.stepBytes},
                   {"out_of_place", measuresOutOfPlace(o.placement)},
                   {"in_place", measuresInPlace(o.placement)},
                   {"mpi_reduce_scatter", mpiCalls},
                   {"issue", issues},
                   {"cache", caches},
                   {"alltoallv_counts", std::string(nameOf(o.alltoallvCounts.kind))},
                   {"check", o.check}};
  return j;
}

}  // namespace ts
