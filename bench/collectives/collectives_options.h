#pragma once
// What `trainscope collectives` was asked to do, validated: the command line (collectives_command.cpp) fills
// it, the runner (collectives_runner.cpp) executes it, and its JSON form is the record's resolved config.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "bench/collectives/alltoallv_counts.h"
#include "bench/collectives/collectives_choices.h"
#include "bench/collectives/nccl_tests_flags.h"
#include "bench/failures/default_timeout.h"
#include "comm/bootstrap.h"
#include "comm/collectives/collective.h"
#include "comm/communicator.h"

namespace ts {

struct CollectivesOptions {
  BackendKind backend = BackendKind::kAuto;
  BootstrapKind bootstrap = BootstrapKind::kAuto;
  GpuChoice gpus;  // NCCL: GPUs per process (--gpus-per-process) and the first one (--device cuda:N)
  std::vector<const Collective*> ops;
  bool allOps = false;                        // --ops all: the ops the backend runs (fitOpsToBackend)
  std::vector<const Collective*> opsLeftOut;  // what --ops all left out, the backend not running it
  std::vector<DType> dtypes = {DType::kFloat32};
  std::vector<RedOp> redops = {RedOp::kSum};
  std::uint64_t minBytes = 8;
  std::uint64_t maxBytes = 32ull << 20;
  double stepFactor = 2;
  std::uint64_t stepBytes = 0;  // > 0: arithmetic sweep instead of geometric
  int root = 0;
  AlltoallvCounts alltoallvCounts;  // alltoallv's per-pair counts (--alltoallv-counts)
  int warmup = 5;
  int iters = 20;
  int trials = 1;
  // From this size on (0: never), largeIters timed iterations after largeWarmup untimed ones: a large message's
  // iteration is long and steady, so fewer measure it as well (OSU's micro-benchmarks run a tenth of the
  // iterations above 8 KiB), while a sweep's time goes to the large sizes.
  std::uint64_t largeBytes = 0;
  int largeIters = 5;
  int largeWarmup = 2;
  PlacementChoice placement = PlacementChoice::kBoth;
  // reduce_scatter on the MPI backend: the MPI calls to measure (mpiReduceScatterCalls), each a section of its own.
  MpiReduceScatterChoice mpiReduceScatter = mpiReduceScatterChoiceOf(kDefaultMpiReduceScatter);
  // MPI: the forms of each call measured (issueKinds), each a section of its own; blocking, as before the option.
  IssueChoice issue = IssueChoice::kBlocking;
  // MPI: the caches' states each call is timed from (cacheStates), each a section of its own; hot, as before the option.
  CacheChoice cache = CacheChoice::kHot;
  // What --issue nonblocking left out (or --issue both measured blocking only): the ops without a nonblocking MPI call
  // (Collective::startsOnMpi), set by fitOpsToBackend.
  std::vector<const Collective*> opsBlockingOnly;
  int graph = 0;
  bool check = true;
  double timeoutS = kDefaultTimeoutS;
  std::string jsonPath;
  std::string label;
  std::string traceDir;  // --trace: every rank's spans (each measurement, its check, warm-up and trials)
  // The options as given (the option table's record of the arguments, resolveRecorded): the run's config, to which
  // toJson adds what they resolved to.
  nlohmann::json given = nlohmann::json::object();
};

// The options as the user writes them (command line or suite file): lists, sizes and the device as text; the closed
// choices and numbers are in opts, set by the option table directly.
struct CollectivesArgs {
  // text forms, resolved by resolveCollectivesArgs
  std::string device = "cuda", ops = "all", dtype = "float32", redop = "sum", alltoallvCounts = "uniform";
  std::string minBytes = "8", maxBytes = "32M", stepBytes = "0", largeBytes = "0";
  // The command line's variants: one run per transport, algorithm or protocol, started by `launcher`.
  std::string transports, algos, protos, launcher;
  CollectivesOptions opts;
  NcclTestsFlags ncclTests;  // nccl-tests' own spellings (-t -c -z -a -R -m), applied over opts
};

// Resolves names and sizes and validates everything that does not need the world; UsageError otherwise.
CollectivesOptions resolveCollectivesArgs(const CollectivesArgs& args);

// The sizes of the sweep for one element size: from minBytes to maxBytes inclusive, strictly increasing,
// each a whole number of elements (-b rounded up; then each the factor's product, or -i more, rounded up,
// and at least one element more than the last). UsageError for a sweep of too many sizes.
std::vector<std::uint64_t> sweepSizes(const CollectivesOptions& o, std::size_t eltSize);
// What one op runs of those sizes on nranks: each as the op divides it (whole elements per rank for the
// gathered ops), without the sizes too small for it or that round down to the one before, so the
// records' bytes strictly increase.
// `exchange`: the per-pair counts of an op that takes them (Collective::layout).
std::vector<CollectiveLayout> sweepLayouts(const Collective& c, const std::vector<std::uint64_t>& sizes, std::size_t eltSize,
                                           int nranks, const ExchangeMatrix* exchange = nullptr);
// Keeps the ops the (resolved) backend runs, as their declarations say (x-backends): --ops all leaves out
// the others, naming them in opsLeftOut; a named op the backend does not run is a UsageError. Likewise for --issue:
// a form other than blocking on a backend other than MPI is a UsageError, and the ops without a nonblocking MPI call go
// to opsBlockingOnly (--issue nonblocking: left out of --ops all, a UsageError when named). Called once the
// backend is known and before any work, so that no run dies at an op's first launch.
void fitOpsToBackend(CollectivesOptions& o, BackendKind backend);
// Checks everything that does not need the world (sizes, counts, flags); UsageError naming the option.
void validate(const CollectivesOptions& o);
// The untimed and timed iterations of a size: --large-warmup and --large-iters from --large-bytes on, else
// --warmup and --iters.
struct IterationCounts {
  int warmup = 0, iters = 0;
};
IterationCounts iterationsAt(const CollectivesOptions& o, std::uint64_t bytes);
// The run's config: the options as given (`given`, under their suite keys) and, under "resolved", what resolving them
// decided (the options the runner takes that differ from the text given: lists, sizes in bytes, auto choices).
nlohmann::json toJson(const CollectivesOptions& o);

struct RunContext;
// One collectives step inside a run (the `collectives` command, or a suite step): builds the communicator,
// sweeps, adds the records; returns the number of wrong elements found.
std::size_t runCollectivesStep(const CollectivesOptions& o, RunContext& ctx);
// The `collectives` command: a run of one step; returns the exit code (0, or 1 when a result check failed).
int runCollectives(const CollectivesOptions& o, const std::vector<std::string>& argv);

}  // namespace ts
