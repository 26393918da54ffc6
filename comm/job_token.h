#pragma once
// The per-job token every hello to process 0 must carry, so that a process of another job (or anyone
// else who reaches MASTER_PORT) cannot take a rank. Read from the environment, in this order:
//   TRAINSCOPE_JOB_TOKEN         set by the user, the same in every process (a secret if strangers can reach the port)
//   TORCHELASTIC_RUN_ID          torchrun's --rdzv-id (random under --standalone); its default "none" is no id
//   SLURM_JOB_ID                 srun / sbatch
//   OMPI_MCA_ess_base_jobid      Open MPI 4's mpirun
//   PMIX_NAMESPACE               PMIx launchers (Open MPI 5's mpirun, srun --mpi=pmix)
// The first that is set wins; a launcher's id becomes "<VARIABLE>=<id>" so two launchers' ids never agree
// by accident. When none is set the token is empty: process 0 then admits any hello that claims a free
// rank of the right world, and says so once on stderr (makeTcpBootstrapFromEnv).
#include <string>

namespace ts {

struct JobToken {
  std::string value;   // empty: none set
  std::string source;  // the variable it came from, for messages (never the value)
};

// LocalUsageError when TRAINSCOPE_JOB_TOKEN is longer than a hello can carry.
JobToken jobTokenFromEnvironment();

}  // namespace ts
