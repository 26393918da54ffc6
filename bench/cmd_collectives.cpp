// `trainscope collectives`: the command line of the collective sweep (nccl-tests' flags where they exist).
#include <array>
#include <memory>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "bench/collectives_options.h"
#include "bench/commands.h"
#include "bench/transports.h"

namespace ts {
Action addCollectivesCommand(CLI::App& app) {
  auto raw = std::make_shared<CollectivesArgs>();
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
  sub->add_option("--trace", o.traceDir, "Write every rank's spans (each measurement, its check, warm-up and trials) as Chrome trace JSON into DIR");
  auto variants = std::make_shared<std::array<std::string, 4>>();  // transports, algos, protos, launcher
  sub->add_option("--transports", (*variants)[0], "Run once per transport and merge: nccl: nvlink,pcie,ib,socket,mpi; mpi: shm,tcp");
  sub->add_option("--algos", (*variants)[1], "NCCL: run once per algorithm (ring,tree,nvls,...) and merge");
  sub->add_option("--protos", (*variants)[2], "NCCL: run once per protocol (LL,LL128,Simple) and merge");
  sub->add_option("--launcher", (*variants)[3], "How --transports/--algos/--protos start each run (default for mpi: 'mpirun -np 2')");
  return [raw, variants](const std::vector<std::string>& argv) {
    const CollectivesOptions o = resolveCollectivesArgs(*raw);
    const auto& [transports, algos, protos, launcher] = *variants;
    if (transports.empty() && algos.empty() && protos.empty()) {
      if (!launcher.empty()) throw UsageError("--launcher goes with --transports, --algos or --protos");
      return runCollectives(o, argv);
    }
    VariantRequest req;
    req.transports = splitList(transports);
    req.algos = splitList(algos);
    req.protos = splitList(protos);
    req.launcher = launcher;
    req.backend = o.backend;
    req.jsonPath = o.jsonPath;
    return runVariants(req, argv);
  };
}

}  // namespace ts
