#include "comm/bootstrap.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "base/env_value.h"
#include "base/error.h"
#include "comm/bootstrap_single.h"
#include "comm/bootstrap_tcp.h"
#include "comm/launcher.h"
#ifdef TRAINSCOPE_HAVE_MPI
#include "comm/mpi/mpi_bootstrap.h"
#endif

namespace ts {

std::vector<std::string> Bootstrap::allGatherStrings(const std::string& mine) {
  const unsigned long long len = mine.size();
  if (len > kMaxGatheredString)
    throw Error(fmt::format("internal: a {}-byte message is more than the {} bytes processes exchange", len, kMaxGatheredString));
  std::vector<unsigned long long> lens(static_cast<std::size_t>(size()));
  allGather(&len, lens.data(), sizeof(len));
  unsigned long long longest = 0;
  // Checked before anything is allocated: a length from another process is no reason to ask for 2^62 bytes.
  for (int p = 0; p < size(); ++p) {
    if (lens[p] > kMaxGatheredString)
      throw Error(fmt::format("process {} announced a {}-byte message, more than the {} bytes processes exchange", p, lens[p],
                              kMaxGatheredString));
    longest = std::max(longest, lens[p]);
  }
  std::string padded = mine;
  padded.resize(longest);
  std::string all(longest * static_cast<std::size_t>(size()), '\0');
  if (longest > 0) allGather(padded.data(), all.data(), longest);
  std::vector<std::string> out;
  for (int p = 0; p < size(); ++p) out.push_back(all.substr(p * longest, lens[p]));
  return out;
}

std::vector<double> Bootstrap::allGatherDoubles(const std::vector<double>& mine) {
  // Callers pass equal lengths on every process (same iteration counts); checked so a mismatch fails loudly.
  const unsigned long long n = mine.size();
  std::vector<unsigned long long> ns(static_cast<std::size_t>(size()));
  allGather(&n, ns.data(), sizeof(n));
  for (auto other : ns)
    if (other != n) throw Error("internal: processes disagree on the number of timing samples");
  std::vector<double> out(n * static_cast<std::size_t>(size()));
  if (n > 0) allGather(mine.data(), out.data(), n * sizeof(double));
  return out;
}

long long Bootstrap::sum(long long v) {
  std::vector<long long> all(static_cast<std::size_t>(size()));
  allGather(&v, all.data(), sizeof(v));
  long long s = 0;
  for (auto x : all) s += x;
  return s;
}

bool Bootstrap::allTrue(bool v) { return sum(v ? 0 : 1) == 0; }

bool launchedByMpi() { return detectLaunch().mpiWired; }

void abortWithoutBootstrap(int exitCode) {
#ifdef TRAINSCOPE_HAVE_MPI
  abortMpiWorldIfInitialized(exitCode);
#endif
  std::_Exit(exitCode);
}

int launcherRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"})
    if (const char* v = envValue(name)) return std::atoi(v);
  return 0;
}

namespace {

// How processes meet, given who started them: a launcher of N processes that the bootstrap could not see would
// leave N worlds of 1, so those cases stop here, on every process, with what to do instead.
BootstrapKind chooseBootstrap(const Launch& launch, bool wantMpi) {
  if (launch.mpiWired) return BootstrapKind::kMpi;
  if (launch.launcher == Launcher::kSrun && launch.size > 1)
    throw LocalUsageError(fmt::format(
        "started by srun as {} tasks, but srun set up no PMIx or PMI for MPI to find the others: launch with srun --mpi=pmix, "
        "or with mpirun inside the allocation",
        launch.size));
  const bool envLaunch = launch.launcher == Launcher::kEnv || launch.launcher == Launcher::kTorchrun;
  if (envLaunch && wantMpi)
    throw LocalUsageError(fmt::format(
        "started by {} (RANK/WORLD_SIZE) as {} processes, but the MPI backend needs an MPI launcher: use mpirun or srun "
        "--mpi=pmix (RANK/WORLD_SIZE serve the NCCL backend on GPUs)",
        launcherName(launch.launcher), launch.size));
  if (envLaunch) return BootstrapKind::kEnv;
  return wantMpi ? BootstrapKind::kMpi : BootstrapKind::kSingle;
}

// A world other than the one the launcher started is never run: not a silent world of 1, not a partial one.
void checkWorld(const Launch& launch, const Bootstrap& boot) {
  if (launch.size <= 0 || boot.size() == launch.size) return;
  throw LocalUsageError(
      fmt::format("started by {} as {} processes, but the {} bootstrap found {}{}", launcherName(launch.launcher), launch.size,
                  nameOf(boot.kind()), boot.size(),
                  boot.kind() == BootstrapKind::kSingle ? " (--bootstrap single runs one process: leave it at auto)" : ""));
}

std::unique_ptr<Bootstrap> create(BootstrapKind kind, const Launch& launch) {
  switch (kind) {
    case BootstrapKind::kMpi:
#ifdef TRAINSCOPE_HAVE_MPI
      checkMpiTransportsReachEveryHost(launch);
      return std::make_unique<MpiBootstrap>();
#else
      throw UsageError(
          "this trainscope was built without MPI: launch it with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT instead of mpirun, or "
          "rebuild with MPI");
#endif
    case BootstrapKind::kEnv:
      return makeTcpBootstrapFromEnv(launch.launcher);
    case BootstrapKind::kSingle:
    case BootstrapKind::kAuto:
      break;
  }
  return std::make_unique<SingleBootstrap>();
}

}  // namespace

std::unique_ptr<Bootstrap> makeBootstrap(BootstrapKind kind, bool wantMpi, const Launch& launch) {
  std::unique_ptr<Bootstrap> boot = create(kind == BootstrapKind::kAuto ? chooseBootstrap(launch, wantMpi) : kind, launch);
  checkWorld(launch, *boot);
  return boot;
}

}  // namespace ts
