#include "base/precision.h"

namespace ts {

DType storageType(Precision p) {
  switch (p) {
    case Precision::kBFloat16:
      return DType::kBFloat16;
    case Precision::kFloat16:
      return DType::kFloat16;
    default:
      return DType::kFloat32;
  }
}

double unitRoundoff(Precision p) {
  switch (p) {
    case Precision::kFloat32:
      return 6e-8;  // 2^-24
    case Precision::kTF32:
      return 4.9e-4;  // 10-bit mantissa: 2^-11
    case Precision::kFloat16:
      return 4.9e-4;
    case Precision::kBFloat16:
      return 3.9e-3;  // 7-bit mantissa: 2^-8
  }
  return 1;
}

}  // namespace ts
