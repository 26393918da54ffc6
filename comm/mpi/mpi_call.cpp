#include "comm/mpi/mpi_call.h"

#include <climits>
#include <cstdint>

#include <fmt/format.h>

namespace ts {

MPI_Datatype mpiType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt8:
      return MPI_INT8_T;
    case DType::kUInt8:
      return MPI_UINT8_T;
    case DType::kFloat16:
    case DType::kBFloat16:
      return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

MPI_Op mpiOp(RedOp op) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      return MPI_SUM;
    case RedOp::kProd:
      return MPI_PROD;
    case RedOp::kMin:
      return MPI_MIN;
    case RedOp::kMax:
      return MPI_MAX;
  }
  return MPI_SUM;
}

namespace {
template <typename T>
void divideAll(void* p, std::size_t n, int by) {
  auto* x = static_cast<T*>(p);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(x[i] / static_cast<T>(by));
}
}  // namespace

void finishAverage(void* p, std::size_t n, DType t, RedOp op, int worldSize) {
  if (op != RedOp::kAvg) return;
  switch (t) {
    case DType::kFloat32:
      divideAll<float>(p, n, worldSize);
      break;
    case DType::kFloat64:
      divideAll<double>(p, n, worldSize);
      break;
    case DType::kInt32:
      divideAll<std::int32_t>(p, n, worldSize);
      break;
    case DType::kInt8:
      divideAll<std::int8_t>(p, n, worldSize);
      break;
    case DType::kUInt8:
      divideAll<std::uint8_t>(p, n, worldSize);
      break;
    default:
      break;  // rejected by supports()
  }
}

int mpiCount(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw errorInContext(fmt::format("{} elements exceed the MPI count limit of {} per call", n, INT_MAX));
  return static_cast<int>(n);
}

const void* inPlaceOr(const void* send, const void* at) { return send == at ? MPI_IN_PLACE : send; }

char* offsetBytes(void* p, std::size_t elems, DType t) { return static_cast<char*>(p) + elems * dtypeSize(t); }

}  // namespace ts
