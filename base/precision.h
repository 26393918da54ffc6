#pragma once
// The arithmetic a kernel (or a training run) computes in: float32, float32 with TF32 tensor cores, or
// bfloat16 / float16 with float32 accumulation. Distinct from DType, which is how elements are stored:
// TF32 stores float32.
#include <string_view>
#include <utility>

#include "base/dtype.h"
#include "base/enum_names.h"

namespace ts {

enum class Precision { kFloat32, kTF32, kBFloat16, kFloat16 };

template <>
struct EnumNames<Precision> {
  // Then the aliases the kernels' --dtype has always taken (fp32, bf16, half, ...).
  static constexpr std::pair<std::string_view, Precision> kNames[] = {
      {"float32", Precision::kFloat32}, {"tf32", Precision::kTF32},     {"bfloat16", Precision::kBFloat16},
      {"float16", Precision::kFloat16}, {"fp32", Precision::kFloat32},  {"float", Precision::kFloat32},
      {"tfloat32", Precision::kTF32},   {"bf16", Precision::kBFloat16}, {"fp16", Precision::kFloat16},
      {"half", Precision::kFloat16},
  };
};

constexpr std::string_view precisionName(Precision p) { return nameOf(p); }  // "float32", "tf32", "bfloat16", "float16"
DType storageType(Precision p);                                              // the element type of the data (float32 for TF32)
// Relative-error tolerance per accumulated term for a check in this precision (float32 ~1e-5 ... bf16 ~1e-2).
double unitRoundoff(Precision p);

}  // namespace ts
