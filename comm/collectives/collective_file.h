#pragma once
// What a collective's own file (comm/collectives/<name>.cpp) includes: the Collective it defines, the
// input and expected-value helpers, and the MPI and NCCL call helpers of the backends this build has.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"
#ifdef TRAINSCOPE_HAVE_MPI
#include "comm/mpi/mpi_call.h"
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
#include "comm/nccl/nccl_call.h"
#endif
