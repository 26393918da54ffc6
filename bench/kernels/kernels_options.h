#pragma once
// What `trainscope kernels` was asked to do (kernels_command.cpp fills it; kernels_runner.cpp runs it).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/precision.h"
#include "bench/failures/default_timeout.h"
#include "kernels/specs/kernel_op.h"

namespace ts {

struct RunContext;

enum class KernelBackend { kAuto, kCpu, kCuda };  // --backend; auto: CUDA when a GPU is usable
// --conv-algo: the library's first choice (cuDNN's on CUDA; on the CPU oneDNN's, or im2col in a build without
// it), cuDNN timing each (CUDA), or a named CPU algorithm. --conv-layout is ConvLayout (kernels/cpu/convolution.h).
enum class ConvAlgo { kHeuristic, kSearch, kOneDnn, kIm2col };

template <>
struct EnumNames<KernelBackend> {
  static constexpr std::pair<std::string_view, KernelBackend> kNames[] = {
      {"auto", KernelBackend::kAuto}, {"cpu", KernelBackend::kCpu}, {"cuda", KernelBackend::kCuda}};
};
template <>
struct EnumNames<ConvAlgo> {
  static constexpr std::pair<std::string_view, ConvAlgo> kNames[] = {{"heuristic", ConvAlgo::kHeuristic},
                                                                     {"search", ConvAlgo::kSearch},
                                                                     {"onednn", ConvAlgo::kOneDnn},
                                                                     {"im2col", ConvAlgo::kIm2col}};
};

struct KernelsOptions {
  std::vector<const KernelOp*> ops;
  bool cuda = false;                         // the CUDA implementations on GPU 0 (--backend cuda, or auto with a GPU)
  KernelSettings settings;                   // --dtype, --conv-algo, --conv-layout
  ConvAlgo convAlgo = ConvAlgo::kHeuristic;  // as asked (settings holds what it resolved to)
  // The transformer block whose shapes the ops are measured at.
  std::int64_t hidden = 128, seq = 64, batch = 2, vocab = 1024;
  int warmup = 2;
  int iters = 10;
  int trials = 1;
  // A case's timed runs last at least this long in all (more than --iters where one run is short): a tiny GEMM
  // timed 5 times is one scheduler tick from a wrong figure, timed for 30 ms it is its median. 0: --iters only.
  double minTimeMs = 0;
  bool ceilings = true;  // measure the compute and memory ceilings first
  // Shapes from --shapes FILE, per op; an op listed there is measured at those shapes only.
  std::vector<std::pair<const KernelOp*, KernelShape>> userShapes;
  double timeoutS = kDefaultTimeoutS;
  std::string jsonPath;
  std::string label;
  std::string traceDir;  // --trace: process 0's spans (each kernel case: its check and timed runs)
  // The options as given (the option table's record of the arguments, resolveRecorded): the run's config, to which
  // toJson adds what they resolved to.
  nlohmann::json given = nlohmann::json::object();
};

struct KernelsArgs {
  std::string ops = "all", preset = "tiny", shapesFile;
  KernelBackend backend = KernelBackend::kAuto;
  ConvAlgo convAlgo = ConvAlgo::kHeuristic;
  ConvLayout convLayout = ConvLayout::kNchw;
  Precision dtype = Precision::kFloat32;
  std::int64_t hidden = 0, seq = 0, batch = 0, vocab = 0;  // 0 = the preset's
  KernelsOptions opts;
};
KernelsOptions resolveKernelsArgs(const KernelsArgs& args);  // UsageError naming the option
// A shapes file: [[shape]] tables with `op`, an optional `name`, and every dimension of the op (the same
// names as the records' shape). UsageError naming the file, line and key.
std::vector<std::pair<const KernelOp*, KernelShape>> loadKernelShapes(const std::string& path, std::int64_t H, std::int64_t S,
                                                                      std::int64_t B, std::int64_t V);

// The run's config: the options as given (`given`, under their suite keys) and, under "resolved", what resolving them
// decided (the options the runner takes that differ from the text given: lists, sizes in bytes, auto choices).
nlohmann::json toJson(const KernelsOptions& o);
std::size_t runKernelsStep(const KernelsOptions& o, RunContext& ctx);  // returns the number of failed checks
int runKernels(const KernelsOptions& o, const std::vector<std::string>& argv);

}  // namespace ts
