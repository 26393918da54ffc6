#include "bench/collectives_options.h"

#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"

namespace ts {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}



CollectivesOptions resolveCollectivesArgs(const CollectivesArgs& raw) {
  CollectivesOptions o = raw.opts;
  if (raw.backend == "auto") o.backend = BackendKind::kAuto;
  else if (raw.backend == "mpi") o.backend = BackendKind::kMpi;
  else if (raw.backend == "nccl") o.backend = BackendKind::kNccl;
  else throw UsageError(fmt::format("--backend: unknown backend '{}' (auto, mpi, nccl)", raw.backend));
  if (raw.bootstrap == "auto") o.bootstrap = BootstrapKind::kAuto;
  else if (raw.bootstrap == "mpi") o.bootstrap = BootstrapKind::kMpi;
  else if (raw.bootstrap == "env") o.bootstrap = BootstrapKind::kEnv;
  else if (raw.bootstrap == "single") o.bootstrap = BootstrapKind::kSingle;
  else throw UsageError(fmt::format("--bootstrap: unknown bootstrap '{}' (auto, mpi, env, single)", raw.bootstrap));
  o.ops.clear();
  if (raw.ops == "all") o.ops = allCollectives();
  else
    for (const auto& name : splitList(raw.ops)) o.ops.push_back(&findCollective(name));
  o.dtypes.clear();
  if (raw.dtype == "all") o.dtypes = allDTypes();
  else
    for (const auto& name : splitList(raw.dtype)) o.dtypes.push_back(parseDType(name));
  o.redops.clear();
  if (raw.redop == "all") o.redops = allRedOps();
  else
    for (const auto& name : splitList(raw.redop)) o.redops.push_back(parseRedOp(name));
  o.minBytes = parseBytes(raw.minBytes, "-b/--min-bytes");
  o.maxBytes = parseBytes(raw.maxBytes, "-e/--max-bytes");
  o.stepBytes = parseBytes(raw.stepBytes, "-i/--step-bytes");
  if (raw.placement == "both") o.outOfPlace = o.inPlace = true;
  else if (raw.placement == "out") { o.outOfPlace = true; o.inPlace = false; }
  else if (raw.placement == "in") { o.outOfPlace = false; o.inPlace = true; }
  else throw UsageError(fmt::format("--placement: '{}' is not both, out or in", raw.placement));
  validate(o);
  return o;
}


std::vector<std::uint64_t> sweepSizes(const CollectivesOptions& o) {
  constexpr std::size_t kMaxSizes = 10000;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = o.minBytes; s <= o.maxBytes;) {
    sizes.push_back(s);
    if (sizes.size() > kMaxSizes)
      throw UsageError(fmt::format("the sweep from -b {} to -e {} has more than {} sizes; raise -f/--step-factor or -i/--step-bytes",
                                   o.minBytes, o.maxBytes, kMaxSizes));
    const std::uint64_t next = o.stepBytes ? s + o.stepBytes : static_cast<std::uint64_t>(static_cast<double>(s) * o.stepFactor);
    if (next <= s) break;  // factor too small to move on from this size, or overflow
    s = next;
  }
  return sizes;
}

void validate(const CollectivesOptions& o) {
  if (o.ops.empty()) throw UsageError("--ops: no collective given");
  if (o.minBytes == 0) throw UsageError("-b/--min-bytes must be at least 1 byte");
  if (o.minBytes > o.maxBytes)
    throw UsageError(fmt::format("-b/--min-bytes ({}) is larger than -e/--max-bytes ({})", formatBytes(o.minBytes), formatBytes(o.maxBytes)));
  if (!o.stepBytes && !(o.stepFactor > 1.0)) throw UsageError(fmt::format("-f/--step-factor must be greater than 1 (got {})", o.stepFactor));
  if (o.iters < 1) throw UsageError("-n/--iters must be at least 1");
  if (o.trials < 1) throw UsageError("--trials must be at least 1");
  if (o.warmup < 0) throw UsageError("-w/--warmup cannot be negative");
  if (o.root < 0) throw UsageError(fmt::format("-r/--root {} is not a rank", o.root));
  if (o.graph < 0) throw UsageError("-G/--graph cannot be negative");
  if (o.timeoutS < 0) throw UsageError("--timeout cannot be negative");
  if (o.gpusPerProcess < 0) throw UsageError("--gpus-per-process cannot be negative");
  if (!o.outOfPlace && !o.inPlace) throw UsageError("--placement: nothing to run");
  if (o.dtypes.empty()) throw UsageError("-d/--dtype: no dtype given");
  if (o.redops.empty()) throw UsageError("-o/--redop: no reduction given");
  sweepSizes(o);
}

nlohmann::json toJson(const CollectivesOptions& o) {
  nlohmann::json ops = nlohmann::json::array(), dtypes = nlohmann::json::array(), redops = nlohmann::json::array();
  for (auto* c : o.ops) ops.push_back(std::string(c->name()));
  for (auto t : o.dtypes) dtypes.push_back(std::string(dtypeName(t)));
  for (auto r : o.redops) redops.push_back(std::string(redOpName(r)));
  return {{"backend", backendName(o.backend)},
          {"gpus_per_process", o.gpusPerProcess},
          {"ops", ops},
          {"dtypes", dtypes},
          {"redops", redops},
          {"min_bytes", o.minBytes},
          {"max_bytes", o.maxBytes},
          {"step_factor", o.stepFactor},
          {"step_bytes", o.stepBytes},
          {"root", o.root},
          {"warmup", o.warmup},
          {"iters", o.iters},
          {"trials", o.trials},
          {"out_of_place", o.outOfPlace},
          {"in_place", o.inPlace},
          {"graph", o.graph},
          {"check", o.check},
          {"timeout_s", o.timeoutS},
          {"label", o.label},
          {"trace", o.traceDir}};
}

}  // namespace ts
