#pragma once
// One benchmarked op = one small file answering: which shapes (named dims, and the built-in sets the
// workloads really call), how many FLOPs and bytes (the minimum the op must move), how to run it, and
// how to check it against a float64 reference on fresh random inputs with poisoned outputs. A shared
// driver (bench/kernels/kernels_runner.cpp) times and records it, as comm/collectives does for collectives.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "base/precision.h"
#include "kernels/cpu/convolution.h"

namespace ts {

struct KernelShape {
  std::string name;  // where the shape comes from ("attn.qkv", "square 1024", ...)
  std::vector<std::pair<std::string, std::int64_t>> dims;
  std::int64_t operator[](std::string_view d) const;
};

// How the ops are run: the precision and the per-op choices of the command line.
struct KernelSettings {
  Precision precision = Precision::kFloat32;  // --dtype
  bool convSearch = false;                    // --conv-algo search: cuDNN times its algorithms (else its heuristic)
  bool convNhwc = false;                      // --conv-layout nhwc (else NCHW)
  cpu::ConvAlgorithm cpuConv = cpu::defaultConvAlgorithm();  // --conv-algo on the CPU: onednn or im2col
};

struct KernelCheck {
  bool passed = false;
  double maxRelErr = 0;
  double tolerance = 0;
};

// One op at one shape, its buffers allocated.
class KernelCase {
 public:
  virtual ~KernelCase() = default;
  virtual void run() = 0;
  virtual double flops() const = 0;
  virtual double bytes() const = 0;
  // Fresh random inputs (never zeros), outputs poisoned with NaN, one run, compared with float64.
  virtual KernelCheck check() = 0;
  // The CUDA stream run() queues on (a cudaStream_t), or null for a CPU case, which run() completes.
  virtual void* deviceStream() const { return nullptr; }
  // Facts of this case for its record (the algorithm chosen, the workspace it took, ...); an object.
  virtual nlohmann::json details() const { return nlohmann::json::object(); }
};

class KernelOp {
 public:
  virtual ~KernelOp() = default;
  virtual std::string_view name() const = 0;
  // Shapes a transformer block of hidden H, sequence S, batch B and vocabulary V calls (and, for GEMM,
  // large squares for the compute ceiling).
  virtual std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t V) const = 0;
  // The precisions each implementation runs in (the CPU ones: float32).
  virtual bool supports(Precision p, bool cuda) const {
    (void)cuda;
    return p == Precision::kFloat32;
  }
  // CPU implementation, float32. UsageError for a precision the op does not run in.
  virtual std::unique_ptr<KernelCase> make(const KernelShape& shape, const KernelSettings& settings) const = 0;
  // CUDA implementation on the current device; null when the op has none yet (built without CUDA too).
  virtual std::unique_ptr<KernelCase> makeCuda(const KernelShape&, const KernelSettings&) const { return nullptr; }
};

// The registry (registry.cpp): the ops in the order of the result schema's enum of kernel ops, from which the
// build makes kernel_op_list.inc (kernels/CMakeLists.txt). Adding an op: its file (with TS_DEFINE_KERNEL_OP),
// its name in that enum, its CPU implementation and its test. The order is that of `--ops all`, the help
// and the report.
const std::vector<const KernelOp*>& allKernelOps();
const KernelOp& findKernelOp(std::string_view name);  // UsageError listing the known ones
std::string kernelOpNameList();                       // "gemm, conv2d, ...": the registry's names, in order

// One accessor per op of the generated list, defined in the op's file by TS_DEFINE_KERNEL_OP.
namespace kernel_ops {
#define TS_KERNEL_OP(name) const KernelOp& name();
#include "kernels/specs/kernel_op_list.inc"
#undef TS_KERNEL_OP
}  // namespace kernel_ops

// The accessor of op `name`: one Class, made with the arguments that follow.
#define TS_DEFINE_KERNEL_OP(name, Class, ...) \
  const KernelOp& kernel_ops::name() {        \
    static const Class op{__VA_ARGS__};       \
    return op;                                \
  }

// A case of type Case, or null when Case is void: each op file declares its CUDA case as void in a build
// without CUDA, so makeCuda needs no #ifdef of its own.
template <typename Case, typename... Args>
std::unique_ptr<KernelCase> makeCase([[maybe_unused]] Args&&... args) {
  if constexpr (std::is_void_v<Case>)
    return nullptr;
  else
    return std::make_unique<Case>(std::forward<Args>(args)...);
}

// Helpers shared by the op files.
std::vector<float> randomInputs(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f);
// max |got - want| / max(1, |want|) over all elements; NaN anywhere (an unwritten, poisoned output) is +inf.
double maxRelativeError(const float* got, const double* want, std::size_t n);
// The check of n outputs against the float64 reference, passed when within tolerance.
KernelCheck compareWith(const float* got, const double* want, std::size_t n, double tolerance);
// randomInputs rounded to the storage type t (bfloat16, float16; others unchanged), so that the float64
// reference sees exactly what a 16-bit op sees.
std::vector<float> roundedInputs(std::size_t n, unsigned seed, DType t);
void poison(std::vector<float>& v);
void requireFloat32(std::string_view op, Precision precision);

}  // namespace ts
