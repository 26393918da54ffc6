// `trainscope collectives`: the command line of the collective sweep (nccl-tests' flags where they exist).
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "bench/collectives_options.h"
#include "bench/commands.h"

namespace ts {
namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

struct RawCollectivesArgs {
  std::string backend = "auto", bootstrap = "auto", ops = "all", dtype = "float32", redop = "sum";
  std::string minBytes = "8", maxBytes = "32M", stepBytes = "0", placement = "both";
  CollectivesOptions opts;
};

CollectivesOptions resolve(RawCollectivesArgs& raw) {
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

}  // namespace

Action addCollectivesCommand(CLI::App& app) {
  auto raw = std::make_shared<RawCollectivesArgs>();
  CLI::App* sub = app.add_subcommand("collectives", "Sweep collectives over message sizes: time, algbw, busbw, checked results");
  auto& o = raw->opts;
  sub->add_option("--backend", raw->backend, "mpi (host buffers), nccl (GPU buffers), or auto: nccl when a GPU is present")->capture_default_str();
  sub->add_option("--bootstrap", raw->bootstrap, "How processes meet: mpi, env (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), single, or auto")->capture_default_str();
  sub->add_option("--gpus-per-process", o.gpusPerProcess, "NCCL: GPUs driven by each process (0 = all visible)")->capture_default_str();
  sub->add_option("--ops", raw->ops, "all, or a comma list of all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, gather, scatter, sendrecv")->capture_default_str();
  sub->add_option("-b,--min-bytes", raw->minBytes, "Smallest size (K/M/G binary suffixes)")->capture_default_str();
  sub->add_option("-e,--max-bytes", raw->maxBytes, "Largest size")->capture_default_str();
  sub->add_option("-f,--step-factor", o.stepFactor, "Multiply the size by this between steps")->capture_default_str();
  sub->add_option("-i,--step-bytes", raw->stepBytes, "Add this many bytes between steps instead (0 = use the factor)")->capture_default_str();
  sub->add_option("-d,--dtype", raw->dtype, "float32, float64, float16, bfloat16, int32, int8, uint8; a comma list, or all")->capture_default_str();
  sub->add_option("-o,--redop", raw->redop, "sum, prod, min, max, avg; a comma list, or all")->capture_default_str();
  sub->add_option("-r,--root", o.root, "Root rank of broadcast, reduce, gather, scatter")->capture_default_str();
  sub->add_option("-w,--warmup", o.warmup, "Untimed iterations before timing each size")->capture_default_str();
  sub->add_option("-n,--iters", o.iters, "Timed iterations per trial")->capture_default_str();
  sub->add_option("--trials", o.trials, "Trials of --iters iterations")->capture_default_str();
  sub->add_option("--placement", raw->placement, "both, out (out-of-place only) or in (in-place only)")->capture_default_str();
  sub->add_option("-G,--graph", o.graph, "NCCL: capture this many operations in a CUDA graph and time its replays (0 = off)")->capture_default_str();
  sub->add_flag("--check,!--no-check", o.check, "Check every result against its expected value (untimed)");
  sub->add_option("--timeout", o.timeoutS, "Seconds without progress before all ranks are stopped (0 = never)")->capture_default_str();
  sub->add_option("--json", o.jsonPath, "Write the result document here; records stream to the .jsonl beside it");
  sub->add_option("--label", o.label, "A label for this run, carried into every record and the reports");
  return [raw](const std::vector<std::string>& argv) { return runCollectives(resolve(*raw), argv); };
}

}  // namespace ts
