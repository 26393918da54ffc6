#include "comm/launcher.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "base/env_value.h"
#include "base/error.h"
#include "base/split.h"

namespace ts {
namespace {

std::string envString(const char* name) {
  const char* v = envValue(name);
  return v ? v : "";
}

// The whole number `text` spells, when it fits [lo, INT_MAX].
std::optional<int> wholeNumber(const char* text, int lo) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || x < lo || x > INT_MAX) return std::nullopt;
  return static_cast<int>(x);
}

// A whole number in [lo, INT_MAX], or `fallback` when unset; LocalUsageError naming the variable otherwise.
int envWhole(const char* name, int fallback, int lo = 0) {
  const char* v = envValue(name);
  if (!v) return fallback;
  if (const auto x = wholeNumber(v, lo)) return *x;
  throw LocalUsageError(fmt::format("{}='{}' is not a whole number of at least {}", name, v, lo));
}

// RANK, WORLD_SIZE and LOCAL_RANK as far as they are whole numbers: the environment bootstrap checks them with
// its own messages (comm/bootstrap_tcp.cpp), so here a bad one only means "not known".
int lenientWhole(const char* name, int fallback) {
  const char* v = envValue(name);
  return v ? wholeNumber(v, 0).value_or(fallback) : fallback;
}

// The launcher, by the variables only it sets, most specific first: Open MPI's mpirun sets its own and may run
// inside a Slurm allocation; srun sets PMIX_RANK only with --mpi=pmix; torchrun sets RANK and WORLD_SIZE too.
Launch fromVariables() {
  Launch l;
  if (envValue("OMPI_COMM_WORLD_SIZE")) {
    l.launcher = Launcher::kMpirun;
    l.rank = envWhole("OMPI_COMM_WORLD_RANK", 0);
    l.size = envWhole("OMPI_COMM_WORLD_SIZE", 1, 1);
    l.localRank = envWhole("OMPI_COMM_WORLD_LOCAL_RANK", -1);
    l.spansHosts = envWhole("OMPI_COMM_WORLD_LOCAL_SIZE", l.size, 1) < l.size;
    l.mpiWired = true;
    l.jobId = envString("OMPI_MCA_ess_base_jobid");
  } else if (envValue("PMIX_RANK") || envValue("PMI_RANK") || envValue("PMI_SIZE") || envValue("MPI_LOCALNRANKS")) {
    l.launcher = envValue("SLURM_STEP_NUM_TASKS") ? Launcher::kSrun : Launcher::kPmi;  // srun --mpi=pmix is srun
    l.rank = envWhole(envValue("PMIX_RANK") ? "PMIX_RANK" : "PMI_RANK", 0);
    // PMIx exports no size: a Slurm step's task count, or PMI's, when there is one.
    l.size = envWhole("SLURM_STEP_NUM_TASKS", envWhole("PMI_SIZE", 0, 1), 1);
    l.localRank = envWhole("SLURM_LOCALID", envWhole("MPI_LOCALRANKID", -1));
    l.mpiWired = true;
    l.jobId = envString("PMIX_NAMESPACE");
  } else if (envValue("SLURM_STEP_NUM_TASKS") && envValue("SLURM_PROCID")) {
    // A step of srun (the batch script itself has SLURM_JOB_ID and SLURM_NTASKS but is no step of N tasks).
    l.launcher = Launcher::kSrun;
    l.rank = envWhole("SLURM_PROCID", 0);
    l.size = envWhole("SLURM_STEP_NUM_TASKS", 1, 1);
    l.localRank = envWhole("SLURM_LOCALID", -1);
  } else if (envValue("RANK") || envValue("WORLD_SIZE")) {
    l.launcher = envValue("TORCHELASTIC_RUN_ID") ? Launcher::kTorchrun : Launcher::kEnv;
    l.rank = lenientWhole("RANK", 0);
    l.size = lenientWhole("WORLD_SIZE", 0);
    l.localRank = lenientWhole("LOCAL_RANK", -1);
    if (l.launcher == Launcher::kTorchrun) l.jobId = envString("TORCHELASTIC_RUN_ID");
  }
  if (l.launcher == Launcher::kSrun) l.spansHosts = envWhole("SLURM_STEP_NUM_NODES", 1, 1) > 1;
  if (const char* job = envValue("SLURM_JOB_ID")) {
    l.jobId = job;
    l.nodes = envString("SLURM_JOB_NODELIST");
    l.tasksPerNode = envString("SLURM_TASKS_PER_NODE");
  }
  return l;
}

}  // namespace

Launch detectLaunch() {
  const Launch l = fromVariables();
  const bool checkedByTheEnvBootstrap = l.launcher == Launcher::kEnv || l.launcher == Launcher::kTorchrun;
  if (!checkedByTheEnvBootstrap && l.size > 0 && l.rank >= l.size)
    throw LocalUsageError(fmt::format("started by {} as rank {} of a world of {}: the launcher's variables disagree",
                                      launcherName(l.launcher), l.rank, l.size));
  return l;
}

void checkMpiTransportsReachEveryHost(const Launch& launch) {
  const char* btl = envValue("OMPI_MCA_btl");
  if (!launch.spansHosts || !btl || btl[0] == '^') return;  // "^x" excludes: what is left may cross hosts
  // self, vader (sm in Open MPI 5) and smcuda only ever reach processes of the same host.
  for (const std::string& item : splitNonEmpty(btl, ','))
    if (item != "self" && item != "vader" && item != "sm" && item != "smcuda") return;
  // The same on every process (mpirun passes --mca and -x to all): one of them says it.
  throw UsageError(fmt::format(
      "OMPI_MCA_btl={} reaches only processes on the same host, but {} placed this run's {} processes on several hosts: add "
      "a network transport (e.g. OMPI_MCA_btl=self,vader,tcp) or run on one host",
      btl, launcherName(launch.launcher), launch.size));
}

}  // namespace ts
