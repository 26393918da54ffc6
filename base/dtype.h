#pragma once
// Element types and reduction operators, with the host-side conversions the result checks need.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

enum class DType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt8, kUInt8 };
enum class RedOp { kSum, kProd, kMin, kMax, kAvg };

std::size_t dtypeSize(DType t);
std::string_view dtypeName(DType t);  // "float32", "bfloat16", ...
bool dtypeIsFloat(DType t);
// Accepts the canonical names and the usual aliases (float, half, bf16, int, ...); throws UsageError.
DType parseDType(std::string_view name);
const std::vector<DType>& allDTypes();

std::string_view redOpName(RedOp op);
RedOp parseRedOp(std::string_view name);  // throws UsageError
const std::vector<RedOp>& allRedOps();

// Element i of a buffer of type t, as a double, and the reverse (round-to-nearest-even for the
// 16-bit floats; integers wrap modulo their width, as NCCL and MPI integer arithmetic does).
double loadElement(const void* base, DType t, std::size_t i);
void storeElement(void* base, DType t, std::size_t i, double v);

// IEEE binary16 and bfloat16 conversions (software, exact for every representable value).
std::uint16_t floatToHalf(float f);
float halfToFloat(std::uint16_t h);
std::uint16_t floatToBFloat16(float f);
float bfloat16ToFloat(std::uint16_t b);

}  // namespace ts
