// The registry of kernel ops (built from the result schema's enum, kernels/CMakeLists.txt) and the helpers
// the op files share.
#include <cmath>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {

std::int64_t KernelShape::operator[](std::string_view d) const {
  for (const auto& [k, v] : dims)
    if (k == d) return v;
  throw Error(fmt::format("internal: shape {} has no dimension {}", name, d));
}

const std::vector<const KernelOp*>& allKernelOps() {
  static const std::vector<const KernelOp*> ops = {
#define TS_KERNEL_OP(name) &kernel_ops::name(),
#include "kernels/specs/kernel_op_list.inc"
#undef TS_KERNEL_OP
  };
  return ops;
}

std::string kernelOpNameList() {
  std::vector<std::string_view> names;
  for (const KernelOp* op : allKernelOps()) names.push_back(op->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

const KernelOp& findKernelOp(std::string_view name) {
  for (const KernelOp* op : allKernelOps())
    if (op->name() == name) return *op;
  throw UsageError(fmt::format("--ops: unknown kernel '{}' (all, or a comma list of {})", name, kernelOpNameList()));
}

std::vector<float> randomInputs(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    do x = d(rng);
    while (x == 0.0f);
  }
  return v;
}

double maxRelativeError(const float* got, const double* want, std::size_t n) {
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
  }
  return worst;
}

KernelCheck compareWith(const float* got, const double* want, std::size_t n, double tolerance) {
  KernelCheck r;
  r.maxRelErr = maxRelativeError(got, want, n);
  r.tolerance = tolerance;
  r.passed = r.maxRelErr <= tolerance;
  return r;
}

std::vector<float> roundedInputs(std::size_t n, unsigned seed, DType t) {
  auto v = randomInputs(n, seed);
  if (t == DType::kBFloat16) cpu::roundToBFloat16(v.data(), v.size());
  if (t == DType::kFloat16) cpu::roundToHalf(v.data(), v.size());
  return v;
}

void poison(std::vector<float>& v) { std::fill(v.begin(), v.end(), std::numeric_limits<float>::quiet_NaN()); }

void requireFloat32(std::string_view op, Precision precision) {
  if (precision != Precision::kFloat32)
    throw UsageError(fmt::format("{}: the CPU implementation runs in float32 only (got {})", op, precisionName(precision)));
}

}  // namespace ts
