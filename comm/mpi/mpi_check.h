#pragma once
// MPI_CHECK: every MPI call goes through here; a failure becomes a ts::Error naming the call and MPI's reason.
#include <mpi.h>

#include <string>

#include "base/error.h"

namespace ts {

inline std::string mpiErrorString(int code) {
  char buf[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(buf, static_cast<std::size_t>(len));
}

}  // namespace ts

#define MPI_CHECK(call)                                                                                \
  do {                                                                                                 \
    const int ts_mpi_rc_ = (call);                                                                     \
    if (ts_mpi_rc_ != MPI_SUCCESS)                                                                     \
      throw ::ts::errorInContext(std::string(#call) + " failed: " + ::ts::mpiErrorString(ts_mpi_rc_)); \
  } while (0)
