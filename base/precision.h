#pragma once
// The arithmetic a kernel (or a training run) computes in: float32, float32 with TF32 tensor cores, or
// bfloat16 / float16 with float32 accumulation. Distinct from DType, which is how elements are stored:
// TF32 stores float32.
#include <string_view>

#include "base/dtype.h"

namespace ts {

enum class Precision { kFloat32, kTF32, kBFloat16, kFloat16 };

std::string_view precisionName(Precision p);      // "float32", "tf32", "bfloat16", "float16"
Precision parsePrecision(std::string_view name);  // canonical names and aliases (fp32, bf16, half, ...); UsageError
DType storageType(Precision p);                   // the element type of the data (float32 for TF32)
// Relative-error tolerance per accumulated term for a check in this precision (float32 ~1e-5 ... bf16 ~1e-2).
double unitRoundoff(Precision p);

}  // namespace ts
