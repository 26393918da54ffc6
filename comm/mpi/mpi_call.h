#pragma once
// What a collective's own file needs to issue its MPI call (comm/collectives/<name>.cpp, runMpi and
// startMpi): the rank's communicator, and the translations from trainscope's types to MPI's.
#include <mpi.h>

#include <cstddef>
#include <vector>

#include "base/dtype.h"
#include "comm/mpi/mpi_check.h"

namespace ts {

// One rank's side of an MPI communicator (MpiCommunicator passes its own).
struct MpiCall {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
};

// A nonblocking call's request: its own type so that collective.h can name it without including mpi.h.
struct MpiRequest {
  MPI_Request handle = MPI_REQUEST_NULL;
  std::vector<int> counts;  // the counts array of a call that takes one (MPI reads it until the request completes)
};

// float16/bfloat16 travel as 16-bit words; MPI has no arithmetic for them (MpiCommunicator::supports
// refuses to reduce them).
MPI_Datatype mpiType(DType t);
// MPI has no average: it is a sum, then finishAverage divides by the world size (part of the timed op, as in NCCL).
MPI_Op mpiOp(RedOp op);
void finishAverage(void* p, std::size_t n, DType t, RedOp op, int worldSize);
// MPI counts are int; larger messages would need MPI 4 large-count calls (Error naming the limit).
int mpiCount(std::size_t n);
// MPI_IN_PLACE where the send buffer is `at` (NCCL's in-place convention, which the Communicator keeps).
const void* inPlaceOr(const void* send, const void* at);
char* offsetBytes(void* p, std::size_t elems, DType t);
inline const char* offsetBytes(const void* p, std::size_t elems, DType t) {
  return static_cast<const char*>(p) + elems * dtypeSize(t);
}

}  // namespace ts
