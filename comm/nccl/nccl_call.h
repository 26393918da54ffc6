#pragma once
// What a collective's own file needs to issue its NCCL call (comm/collectives/<name>.cpp, runNccl): the
// local rank's communicator and stream, and the translations from trainscope's types to NCCL's.
#include <cuda_runtime.h>
#include <nccl.h>

#include "base/dtype.h"
#include "comm/nccl/nccl_check.h"

namespace ts {

// One local rank of an NcclCommunicator: the call is issued on its stream (NcclCommunicator passes it).
struct NcclCall {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

ncclDataType_t ncclType(DType t);
ncclRedOp_t ncclOp(RedOp op);

}  // namespace ts
