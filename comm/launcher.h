#pragma once
// Who started this process, and the world it meant, read from the environment before any bootstrap: a
// process must never run as a world of 1 when its launcher started N (a plain srun without PMIx, two processes
// with torchrun's variables and the MPI backend, an MPI singleton), and every result says how it was launched.
//   mpirun   — Open MPI's mpirun/mpiexec (OMPI_COMM_WORLD_*; inside a Slurm allocation too);
//   srun     — a Slurm step (SLURM_STEP_NUM_TASKS, SLURM_PROCID): with PMIx/PMI for MPI (srun --mpi=pmix), or
//              without, which MPI cannot run as one world;
//   pmi      — another MPI launcher that MPI_Init can read (PMIX_RANK, PMI_RANK/PMI_SIZE: MPICH's hydra);
//   torchrun — torch.distributed.run / torchelastic (TORCHELASTIC_RUN_ID, RANK, WORLD_SIZE, LOCAL_RANK);
//   env      — RANK and WORLD_SIZE set by hand or by a Kubernetes operator;
//   none     — a plain process.
#include <string>
#include <string_view>

#include "base/enum_names.h"

namespace ts {

enum class Launcher { kNone, kMpirun, kPmi, kSrun, kTorchrun, kEnv };

template <>
struct EnumNames<Launcher> {  // as the result schema's run.launcher.kind names them
  static constexpr std::pair<std::string_view, Launcher> kNames[] = {
      {"none", Launcher::kNone}, {"mpirun", Launcher::kMpirun},     {"pmi", Launcher::kPmi},
      {"srun", Launcher::kSrun}, {"torchrun", Launcher::kTorchrun}, {"env", Launcher::kEnv}};
};

inline std::string_view launcherName(Launcher l) { return nameOf(l); }

struct Launch {
  Launcher launcher = Launcher::kNone;
  int rank = 0;
  int size = 1;  // the processes the launcher started; 0 when it does not say (PMIx alone)
  int localRank = -1;
  bool mpiWired = false;     // MPI_Init will find the world (the launcher set up Open MPI's or PMI's variables)
  bool spansHosts = false;   // the launcher placed the processes on more than one host (when it says so)
  std::string jobId;         // SLURM_JOB_ID, else the MPI launcher's or torchrun's job id ("" when none)
  std::string nodes;         // SLURM_JOB_NODELIST ("" outside Slurm)
  std::string tasksPerNode;  // SLURM_TASKS_PER_NODE, e.g. "2(x2)" ("" outside Slurm)
};

// LocalUsageError (one line naming the variable) for a value that is not a whole number or a rank outside its world.
Launch detectLaunch();

// UsageError when Open MPI is told to use only transports that stay inside a host (OMPI_MCA_btl=self,vader)
// but the launch spans hosts: its ranks could not reach each other and would hang in their first collective.
void checkMpiTransportsReachEveryHost(const Launch& launch);

}  // namespace ts
