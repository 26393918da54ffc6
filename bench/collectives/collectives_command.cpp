// `trainscope collectives`: the option table of the collective sweep (nccl-tests' flags where they exist),
// its command line and its suite step.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/split.h"
#include "bench/choice_errors.h"
#include "bench/collectives/collectives_options.h"
#include "bench/commands.h"
#include "bench/run/transports.h"
#include "bench/run_flags.h"
#include "comm/bootstrap.h"
#include "comm/collectives/collective.h"

namespace ts {
namespace {

// "broadcast, reduce, ...": the collectives that take a root, as their declarations say.
std::string rootedCollectives() {
  std::vector<std::string_view> names;
  for (const Collective* c : allCollectives())
    if (c->rooted()) names.push_back(c->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

using Table = OptionTable<CollectivesArgs>;

// Why the variant options are the command line's alone.
constexpr const char* kVariantsWhy =
    "each variant is a run of its own, started by the launcher; a suite step is one run of the suite's processes";

void addProcessOptions(Table& t) {
  t.group("Processes and devices");
  onUnknownChoice(
      t.add("--backend", "mpi (host buffers), nccl (GPU buffers), or auto: nccl when a GPU is present", TS_FIELD(opts.backend)),
      notOneOf<BackendKind>());
  onUnknownChoice(t.add("--bootstrap", "How processes meet: mpi, env (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), single, or auto",
                        TS_FIELD(opts.bootstrap)),
                  notOneOf<BootstrapKind>())
      .commandLineOnly("a suite's steps run in the suite's processes, which met once when the suite started");
  t.add("-g,--gpus-per-process", "NCCL: GPUs driven by each process (0 = all visible; -g: nccl-tests' spelling)",
        TS_FIELD(opts.gpus.perProcess));
  t.add("--device",
        "NCCL: cuda (each process its own GPUs, by its local rank) or cuda:N (every process of a host from GPU N: to share "
        "GPUs deliberately, with a distinct NCCL_HOSTID per process)",
        TS_FIELD(device));
}

// The sweep: which collectives, sizes, types, reductions and root.
void addSweepOptions(Table& t) {
  t.group("What is measured");
  t.add("--ops", "all, or a comma list of " + collectiveNameList(), TS_FIELD(ops), TextForm::kList);
  t.add("-b,--min-bytes", "Smallest size (K/M/G binary suffixes)", TS_FIELD(minBytes), TextForm::kSize);
  t.add("-e,--max-bytes", "Largest size", TS_FIELD(maxBytes), TextForm::kSize);
  t.add("-f,--step-factor", "Multiply the size by this between steps", TS_FIELD(opts.stepFactor)).range({1, 1e6, true});
  t.add("-i,--step-bytes", "Add this many bytes between steps instead (0 = use the factor)", TS_FIELD(stepBytes),
        TextForm::kSize);
  t.add("-d,--dtype", "float32, float64, float16, bfloat16, int32, int8, uint8; a comma list, or all", TS_FIELD(dtype),
        TextForm::kList);
  t.add("-o,--redop", "sum, prod, min, max, avg; a comma list, or all", TS_FIELD(redop), TextForm::kList);
  t.add("-r,--root", "Root rank of " + rootedCollectives(), TS_FIELD(opts.root));
  t.add("--alltoallv-counts",
        "alltoallv's per-pair counts: uniform (alltoall's exchange), skewed (a hot rank 0 and zero blocks, as MoE routing "
        "makes), or a JSON file {\"counts\": n x n whole weights, rows = sender rank, columns = receiver rank}",
        TS_FIELD(alltoallvCounts));
}

// How each size is timed and checked, and where the run writes.
void addTimingAndOutputOptions(Table& t) {
  const auto opts = TS_FIELD(opts);
  t.group("How it is timed and checked");
  addWarmupFlag(t, opts, "Untimed iterations before timing each size");
  addItersFlag(t, opts);
  addTrialsFlag(t, opts);
  t.add("--large-bytes",
        "From this size on, time --large-iters iterations after --large-warmup (0 = never): large messages' "
        "iterations are long and steady",
        TS_FIELD(largeBytes), TextForm::kSize)
      .notInIdentity(kSampleCount);
  t.add("--large-iters", "Timed iterations per trial from --large-bytes on", TS_FIELD(opts.largeIters))
      .range({1, kMaxCount})
      .notInIdentity(kSampleCount);
  t.add("--large-warmup", "Untimed iterations before timing a size from --large-bytes on", TS_FIELD(opts.largeWarmup))
      .range({0, kMaxCount})
      .notInIdentity(kUntimed);
  onUnknownChoice(t.add("--placement", "both, out (out-of-place only) or in (in-place only)", TS_FIELD(opts.placement)),
                  notOneOf<PlacementChoice>());
  onUnknownChoice(t.add("--mpi-reduce-scatter",
                        "MPI: the call reduce_scatter makes: block (MPI_Reduce_scatter_block), counts (MPI_Reduce_scatter, as "
                        "OSU and the frameworks call it), or both, each measured in a section of its own",
                        TS_FIELD(opts.mpiReduceScatter)),
                  notOneOf<MpiReduceScatterChoice>());
  onUnknownChoice(t.add("--issue",
                        "MPI: each call's form: blocking (MPI_Allreduce), nonblocking (MPI_Iallreduce + MPI_Wait, as training "
                        "issues its collectives), or both, each measured in a section of its own",
                        TS_FIELD(opts.issue)),
                  notOneOf<IssueChoice>());
  onUnknownChoice(t.add("--cache",
                        "MPI: the caches each timed call starts from: hot (the same buffers every iteration, as OSU), cold "
                        "(a 64 MiB buffer written before each iteration, untimed: the buffers come from memory, as in a "
                        "training step), or both, each measured in a section of its own",
                        TS_FIELD(opts.cache)),
                  notOneOf<CacheChoice>());
  t.add("-G,--graph", "NCCL: capture this many operations in a CUDA graph and time its replays (0 = off)", TS_FIELD(opts.graph));
  t.add("--check,!--no-check", "Check every result against its expected value (untimed)", TS_FIELD(opts.check));
  t.group("The run and its output");
  addTimeoutFlag(t, opts).alias("-T");  // nccl-tests' letters
  addOutputFlags(t, opts).alias("-J");
  addTraceFlag(t, opts,
               "Write every rank's spans (each measurement, its check, warm-up and trials) as Chrome trace JSON into DIR");
}

// One run per transport, algorithm or protocol, merged (transports.h); --launcher is added after nccl-tests' flags.
void addVariantOptions(Table& t) {
  t.group("One run per transport, algorithm or protocol");
  t.add("--transports", "Run once per transport and merge: nccl: nvlink,pcie,ib,socket,mpi; mpi: shm,tcp", TS_FIELD(transports))
      .commandLineOnly(kVariantsWhy);
  t.add("--algos", "NCCL: run once per algorithm (ring,tree,nvls,...) and merge", TS_FIELD(algos)).commandLineOnly(kVariantsWhy);
  t.add("--protos", "NCCL: run once per protocol (LL,LL128,Simple) and merge", TS_FIELD(protos)).commandLineOnly(kVariantsWhy);
}

// nccl-tests' flags, pasted from its command lines (nccl_tests_flags.h says what each means here).
void addNcclTestsFlags(Table& t) {
  t.group("nccl-tests' flags");
  const std::string ncclTests = "nccl-tests' spelling; a suite step takes trainscope's own";
  const std::string spelled =
      "nccl-tests' spelling: what it sets is in config.resolved (-c: check); the others take only the value that means "
      "what trainscope does";
  // Set on the command line only, and recorded as what it sets.
  const auto ncclTestsFlag = [&](OptionDecl<CollectivesArgs>& d) -> OptionDecl<CollectivesArgs>& {
    return d.commandLineOnly(ncclTests).notRecorded(spelled);
  };
  ncclTestsFlag(t.add("-t", "nccl-tests: threads per process (1: trainscope drives a process's GPUs from one thread)",
                      TS_FIELD(ncclTests.threads)));
  ncclTestsFlag(t.add("-c", "nccl-tests: check results, 0 or 1 (--no-check, --check)", TS_FIELD(ncclTests.check)));
  ncclTestsFlag(
      t.add("-z", "nccl-tests: blocking collectives (0: trainscope queues and waits once)", TS_FIELD(ncclTests.blocking)));
  ncclTestsFlag(
      t.add("-a", "nccl-tests: which rank's time (3, the slowest: what trainscope reports)", TS_FIELD(ncclTests.average)));
  ncclTestsFlag(t.add("-R", "nccl-tests: buffer registration (0: none)", TS_FIELD(ncclTests.localRegister)));
  ncclTestsFlag(t.add("-m", "nccl-tests: operations per iteration (1)", TS_FIELD(ncclTests.aggIters)));
  ncclTestsFlag(t.add("-N", "nccl-tests: run cycles (1; --trials repeats each size)", TS_FIELD(ncclTests.runCycles)));
  ncclTestsFlag(t.add("-p", "nccl-tests: parallel NCCL init, 0 or 1 (the same with one thread per process)",
                      TS_FIELD(ncclTests.parallelInit)));
  ncclTestsFlag(t.add("-y", "nccl-tests: the default stream (0: trainscope uses its own)", TS_FIELD(ncclTests.streamNull)));
  ncclTestsFlag(t.add("-C", "nccl-tests: report CPU time (0: the operation's time)", TS_FIELD(ncclTests.cpuTime)));
  ncclTestsFlag(t.add("-S", "nccl-tests: timestamps per line (0)", TS_FIELD(ncclTests.timestamps)));
  ncclTestsFlag(t.add("-O", "not an nccl-tests flag: answered with one line", TS_FIELD(ncclTests.capitalO))).hiddenFromHelp();
}

const OptionTable<CollectivesArgs>& collectivesOptions() {
  static const OptionTable<CollectivesArgs> table = [] {
    OptionTable<CollectivesArgs> t;
    addProcessOptions(t);
    addSweepOptions(t);
    addTimingAndOutputOptions(t);
    addVariantOptions(t);
    addNcclTestsFlags(t);
    t.group("One run per transport, algorithm or protocol");
    t.add("--launcher", "How --transports/--algos/--protos start each run (default for mpi: 'mpirun -np 2')", TS_FIELD(launcher))
        .commandLineOnly(kVariantsWhy);
    return t;
  }();
  return table;
}

int runFromCommandLine(const CollectivesArgs& args, const std::vector<std::string>& argv) {
  const CollectivesOptions o = resolveRecorded(collectivesOptions(), args, resolveCollectivesArgs);
  VariantRequest req;
  req.subcommand = VariantSubcommand::kCollectives;
  req.transports = splitNonEmpty(args.transports, ',');
  req.algos = splitNonEmpty(args.algos, ',');
  req.protos = splitNonEmpty(args.protos, ',');
  req.launcher = args.launcher;
  req.backend = o.backend;
  req.jsonPath = o.jsonPath;
  req.paths = {{"--trace", PathKind::kFolder}};
  return variantsRequested(req) ? runVariants(req, argv) : runCollectives(o, argv);
}

// In a suite, `auto` is decided when the file is read: an MPI step needs the MPI bootstrap from the start.
CollectivesOptions resolveForSuite(const CollectivesArgs& a) {
  CollectivesOptions o = resolveCollectivesArgs(a);
  o.backend = resolveBackend(o.backend);
  fitOpsToBackend(o, o.backend);
  return o;
}

SuiteStep readCollectivesStep(StepReader& r) {
  return tableStep(r, collectivesOptions(), resolveForSuite, runCollectivesStep,
                   [](const CollectivesOptions& o) { return o.backend == BackendKind::kMpi; });
}

}  // namespace

Subcommand collectivesSubcommand() {
  return {"collectives", "Sweep collectives over message sizes: time, algbw, busbw, checked results",
          [](CLI::App& sub) {
            return addTable<CollectivesArgs>(sub, collectivesOptions(), std::make_shared<CollectivesArgs>(), runFromCommandLine);
          },
          readCollectivesStep, collectivesOptions().describe()};
}

}  // namespace ts
