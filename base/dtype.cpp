#include "base/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

std::size_t dtypeSize(DType t) {
  switch (t) {
    case DType::kFloat64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
  }
  return 0;
}

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt32:
      return "int32";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
  }
  return "?";
}

bool dtypeIsFloat(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

const std::vector<DType>& allDTypes() {
  static const std::vector<DType> all = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                         DType::kInt32,   DType::kInt8,    DType::kUInt8};
  return all;
}

DType parseDType(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr Alias kAliases[] = {
      {"float32", DType::kFloat32}, {"float", DType::kFloat32},     {"fp32", DType::kFloat32},    {"float64", DType::kFloat64},
      {"double", DType::kFloat64},  {"fp64", DType::kFloat64},      {"float16", DType::kFloat16}, {"half", DType::kFloat16},
      {"fp16", DType::kFloat16},    {"bfloat16", DType::kBFloat16}, {"bf16", DType::kBFloat16},   {"int32", DType::kInt32},
      {"int", DType::kInt32},       {"int8", DType::kInt8},         {"uint8", DType::kUInt8},
  };
  for (const auto& a : kAliases)
    if (a.name == name) return a.type;
  throw UsageError(
      fmt::format("unknown dtype '{}' (expected one of float32, float64, float16, bfloat16, int32, int8, uint8)", name));
}

std::string_view redOpName(RedOp op) {
  switch (op) {
    case RedOp::kSum:
      return "sum";
    case RedOp::kProd:
      return "prod";
    case RedOp::kMin:
      return "min";
    case RedOp::kMax:
      return "max";
    case RedOp::kAvg:
      return "avg";
  }
  return "?";
}

const std::vector<RedOp>& allRedOps() {
  static const std::vector<RedOp> all = {RedOp::kSum, RedOp::kProd, RedOp::kMin, RedOp::kMax, RedOp::kAvg};
  return all;
}

RedOp parseRedOp(std::string_view name) {
  for (RedOp op : allRedOps())
    if (redOpName(op) == name) return op;
  throw UsageError(fmt::format("unknown redop '{}' (expected one of sum, prod, min, max, avg)", name));
}

std::uint16_t floatToHalf(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<std::uint16_t>(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (absx >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65536: inf
  if (absx < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    const float a = std::bit_cast<float>(absx);
    // Adding 0.5 (2^-1) aligns the subnormal half grid (2^-24) to the float mantissa LSB, rounding RNE.
    const std::uint32_t r = std::bit_cast<std::uint32_t>(a + 0.5f) - 0x3f000000u;
    return static_cast<std::uint16_t>(sign | r);
  }
  const std::uint32_t mant_odd = (absx >> 13) & 1u;
  const std::uint32_t rounded = absx + 0xc8000fffu + mant_odd;  // rebias (-112 << 23) and round to nearest even
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

std::uint16_t floatToBFloat16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

float bfloat16ToFloat(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

namespace {
template <typename Int>
Int wrapToInt(double v) {
  // Integer arithmetic wraps modulo 2^bits in NCCL and MPI; the expected values must wrap the same way.
  const auto wide = static_cast<std::int64_t>(std::llround(v));
  return static_cast<Int>(static_cast<std::uint64_t>(wide));
}
}  // namespace

double loadElement(const void* base, DType t, std::size_t i) {
  const auto* p = static_cast<const unsigned char*>(base) + i * dtypeSize(t);
  switch (t) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::kFloat16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return halfToFloat(v);
    }
    case DType::kBFloat16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return bfloat16ToFloat(v);
    }
    case DType::kInt32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::kInt8:
      return static_cast<std::int8_t>(*p);
    case DType::kUInt8:
      return *p;
  }
  return 0;
}

void storeElement(void* base, DType t, std::size_t i, double v) {
  auto* p = static_cast<unsigned char*>(base) + i * dtypeSize(t);
  switch (t) {
    case DType::kFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::kFloat64:
      std::memcpy(p, &v, 8);
      return;
    case DType::kFloat16: {
      const std::uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kBFloat16: {
      const std::uint16_t b = floatToBFloat16(static_cast<float>(v));
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::kInt32: {
      const auto x = wrapToInt<std::int32_t>(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case DType::kInt8:
      *p = static_cast<unsigned char>(wrapToInt<std::int8_t>(v));
      return;
    case DType::kUInt8:
      *p = wrapToInt<std::uint8_t>(v);
      return;
  }
}

}  // namespace ts
