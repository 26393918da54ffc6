#pragma once
// What `trainscope kernels` was asked to do (kernels_command.cpp fills it; kernels_runner.cpp runs it).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "kernels/specs/kernel_op.h"

namespace ts {

struct RunContext;

struct KernelsOptions {
  std::vector<const KernelOp*> ops;
  bool cuda = false;        // the CUDA implementations on GPU 0 (--backend cuda, or auto with a GPU)
  KernelSettings settings;  // --dtype, --conv-algo, --conv-layout
  // The transformer block whose shapes the ops are measured at.
  std::int64_t hidden = 128, seq = 64, batch = 2, vocab = 1024;
  int warmup = 2;
  int iters = 10;
  int trials = 1;
  bool ceilings = true;  // measure the compute and memory ceilings first
  // Shapes from --shapes FILE, per op; an op listed there is measured at those shapes only.
  std::vector<std::pair<const KernelOp*, KernelShape>> userShapes;
  double timeoutS = 300;
  std::string jsonPath;
  std::string label;
  std::string traceDir;  // --trace: process 0's spans (each kernel case: its check and timed runs)
};

struct KernelsArgs {
  std::string ops = "all", dtype = "float32", preset = "tiny", shapesFile, backend = "auto", convAlgo = "heuristic",
              convLayout = "nchw";
  std::int64_t hidden = 0, seq = 0, batch = 0, vocab = 0;  // 0 = the preset's
  KernelsOptions opts;
};
KernelsOptions resolveKernelsArgs(const KernelsArgs& args);  // UsageError naming the option
// A shapes file: [[shape]] tables with `op`, an optional `name`, and every dimension of the op (the same
// names as the records' shape). UsageError naming the file, line and key.
std::vector<std::pair<const KernelOp*, KernelShape>> loadKernelShapes(const std::string& path, std::int64_t H, std::int64_t S,
                                                                      std::int64_t B, std::int64_t V);

nlohmann::json toJson(const KernelsOptions& o);
std::size_t runKernelsStep(const KernelsOptions& o, RunContext& ctx);  // returns the number of failed checks
int runKernels(const KernelsOptions& o, const std::vector<std::string>& argv);

}  // namespace ts
