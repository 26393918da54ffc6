#include "base/precision.h"

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

std::string_view precisionName(Precision p) {
  switch (p) {
    case Precision::kFloat32:
      return "float32";
    case Precision::kTF32:
      return "tf32";
    case Precision::kBFloat16:
      return "bfloat16";
    case Precision::kFloat16:
      return "float16";
  }
  return "?";
}

Precision parsePrecision(std::string_view name) {
  if (name == "float32" || name == "fp32" || name == "float") return Precision::kFloat32;
  if (name == "tf32" || name == "tfloat32") return Precision::kTF32;
  if (name == "bfloat16" || name == "bf16") return Precision::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return Precision::kFloat16;
  throw UsageError(fmt::format("unknown precision '{}' (float32, tf32, bfloat16, float16)", name));
}

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
