#pragma once
// The control plane: how the processes of one run find each other and exchange small messages
// (the ncclUniqueId, timings to reduce, check counts, inventories). It is never timed.
//   mpi    — launched by mpirun/srun with an MPI (a duplicate of MPI_COMM_WORLD);
//   env    — RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (what torchrun and Kubernetes operators set), over TCP;
//   single — one process.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.h"

namespace ts {

// The command line's choice (auto: chooseBootstrap), and what a bootstrap is (Bootstrap::kind; the run
// metadata's world.bootstrap).
enum class BootstrapKind { kAuto, kMpi, kEnv, kSingle };
template <>
struct EnumNames<BootstrapKind> {
  static constexpr std::pair<std::string_view, BootstrapKind> kNames[] = {{"auto", BootstrapKind::kAuto},
                                                                          {"mpi", BootstrapKind::kMpi},
                                                                          {"env", BootstrapKind::kEnv},
                                                                          {"single", BootstrapKind::kSingle}};
};

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual BootstrapKind kind() const = 0;  // never kAuto
  virtual int rank() const = 0;            // this process's index
  virtual int size() const = 0;            // number of processes
  virtual int localRank() const = 0;       // index among the processes on this host
  virtual int localSize() const = 0;       // the processes on this host, this one included (they share its memory)
  // Every process contributes `bytes` bytes; `out` receives size()*bytes, process p's at p*bytes.
  virtual void allGather(const void* in, void* out, std::size_t bytes) = 0;
  virtual void barrier() = 0;
  // A barrier that waits without spinning (polls and sleeps), for processes that stand by while another
  // measures on the same host: a busy-waiting barrier would take a core from the measurement.
  virtual void quietBarrier() { barrier(); }
  // Ends every process of the run (used on timeouts and fatal errors); does not return.
  [[noreturn]] virtual void abortAll(int exitCode) = 0;
  // This process leaves a run that failed without every process agreeing: the others may be inside a collective,
  // or gone, so nothing that waits for them (MPI_Finalize) is done when the bootstrap goes.
  virtual void abandon() {}

  // Strings are at most kMaxGatheredString bytes (Error naming a process that announces more). Built on allGather
  // (each padded to the longest); the TCP bootstrap, whose members anyone with the token can be, sends each as it
  // is and holds each member to a budget.
  static constexpr unsigned long long kMaxGatheredString = 1ull << 30;
  virtual std::vector<std::string> allGatherStrings(const std::string& mine);
  // The numeric address of this process's end of the bootstrap's own connections (the TCP bootstrap's: the
  // interface it reaches process 0 by, or that process 0 is reached at; "" if the system cannot say), nullopt for a
  // bootstrap without connections of its own (MPI, single). The same kind of answer on every process.
  virtual std::optional<std::string> controlAddress() const { return std::nullopt; }
  std::vector<double> allGatherDoubles(const std::vector<double>& mine);  // concatenated, rank-major
  long long sum(long long v);
  bool allTrue(bool v);
};

struct Launch;

// kAuto: MPI when launched by an MPI launcher (or when wantMpi), else env when RANK/WORLD_SIZE are set, else single.
// `launch` is detectLaunch()'s (comm/launcher.h), read once by the caller.
std::unique_ptr<Bootstrap> makeBootstrap(BootstrapKind kind, bool wantMpi, const Launch& launch);

// Ends this process where no bootstrap exists yet (one hung while being made): MPI_Abort when MPI was
// initialised (the launcher then ends the others), else _Exit. Does not return.
[[noreturn]] void abortWithoutBootstrap(int exitCode);

// This process's rank as the launcher announced it (before any bootstrap): OMPI/PMI/PMIX/SLURM/RANK, else 0.
int launcherRank();
// True when an MPI launcher started this process.
bool launchedByMpi();

}  // namespace ts
