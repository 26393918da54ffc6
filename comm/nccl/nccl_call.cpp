#include "comm/nccl/nccl_call.h"

namespace ts {

ncclDataType_t ncclType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt8:
      return ncclInt8;
    case DType::kUInt8:
      return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(RedOp op) {
  switch (op) {
    case RedOp::kSum:
      return ncclSum;
    case RedOp::kProd:
      return ncclProd;
    case RedOp::kMin:
      return ncclMin;
    case RedOp::kMax:
      return ncclMax;
    case RedOp::kAvg:
      return ncclAvg;
  }
  return ncclSum;
}

}  // namespace ts
