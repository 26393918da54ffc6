#pragma once
// The per-job token every hello to process 0 must carry, so that a process of another job (or anyone
// else who reaches MASTER_PORT) cannot take a rank. Read from the environment, in this order:
//   TRAINSCOPE_JOB_TOKEN         set by the user, the same in every process (a secret if strangers can reach the port);
//                                "none" asks for no token: process 0 then admits any hello that claims a free rank
//   TORCHELASTIC_RUN_ID          torchrun's --rdzv-id (a random uuid under --standalone); its default "none" is no id
//   SLURM_JOB_ID                 srun / sbatch
//   OMPI_MCA_ess_base_jobid      Open MPI 4's mpirun
//   PMIX_NAMESPACE               PMIx launchers (Open MPI 5's mpirun, srun --mpi=pmix)
// The first that is set wins; a launcher's id becomes "<VARIABLE>=<id>" so two launchers' ids never agree
// by accident. A launcher hands its id to every process it starts, and only to them (a process's environment is
// readable by its user and root); where there is no launcher nothing can hand the processes a secret, so a
// world of several processes without any of these is refused (makeTcpBootstrapFromEnv) unless
// TRAINSCOPE_JOB_TOKEN=none asks for that.
#include <string>

namespace ts {

struct JobToken {
  std::string value;    // empty: none
  std::string source;   // the variable it came from, for messages (never the value); empty when none is set
  bool waived = false;  // TRAINSCOPE_JOB_TOKEN=none: the user asked for no token
};

// LocalUsageError when TRAINSCOPE_JOB_TOKEN is longer than a hello can carry.
JobToken jobTokenFromEnvironment();

// The one line for a world of several processes that has no token and did not ask for none.
std::string missingJobTokenMessage();

}  // namespace ts
