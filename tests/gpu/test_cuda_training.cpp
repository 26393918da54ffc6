// Training on CUDA against training on the CPU: the same model, seed and data give the same loss
// trajectory (float32; summation orders differ, so within a stated tolerance), and 16-bit mixed precision
// stays within its own. Skips, saying why, where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "tests/gpu/gpu_test_support.h"
#include "workloads/trainer.h"

namespace ts::wl {
namespace {

std::vector<double> losses(TrainOptions o, DeviceKind device) {
  o.device = {device};
  Trainer t(o);
  std::vector<double> out;
  while (!t.done()) out.push_back(t.step().loss);
  return out;
}

struct Case {
  ModelKind model;
  std::int64_t batch;
  Precision precision;
  double tolerance;  // relative, per step
  const char* preset = "tiny";
};

class CudaTraining : public ::testing::TestWithParam<Case> {};

TEST_P(CudaTraining, LossTrajectoryMatchesTheCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA GPU is usable here (cudaGetDeviceCount found none)";
  const Case c = GetParam();
  TrainOptions o;
  o.model = c.model;
  o.preset = c.preset;
  o.steps = 6;
  o.batch = c.batch;
  o.precision = c.precision;
  o.schedule.lr = 3e-3;
  const auto cpu = losses(o, DeviceKind::kCpu), gpu = losses(o, DeviceKind::kCuda);
  ASSERT_EQ(cpu.size(), gpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i)
    EXPECT_NEAR(gpu[i], cpu[i], c.tolerance * std::fabs(cpu[i])) << nameOf(c.model) << " step " << i;
}

INSTANTIATE_TEST_SUITE_P(EveryModel, CudaTraining,
                         ::testing::Values(Case{ModelKind::kMlp, 32, Precision::kFloat32, 1e-4},
                                           Case{ModelKind::kCnn, 8, Precision::kFloat32, 1e-3},
                                           Case{ModelKind::kTransformer, 4, Precision::kFloat32, 1e-4},
                                           Case{ModelKind::kTransformer, 4, Precision::kBFloat16, 2e-2},
                                           Case{ModelKind::kMlp, 32, Precision::kFloat16, 5e-3},
                                           // The MoE routing kernels: the same experts chosen and dropped as on the CPU.
                                           Case{ModelKind::kTransformer, 4, Precision::kFloat32, 1e-4, "moe-tiny"}),
                         [](const auto& info) {
                           std::string name =
                               std::string(nameOf(info.param.model)) + "_" + std::string(nameOf(info.param.precision));
                           if (std::string(info.param.preset) != "tiny") name += "_moe";
                           return name;
                         });

TEST(CudaTrainingErrors, AMissingGpuIsOneClearError) {
  if (haveGpu()) GTEST_SKIP() << "a GPU is present: the no-GPU error cannot be shown here";
  TrainOptions o;
  o.device = {DeviceKind::kCuda};
  try {
    Trainer t(o);
    FAIL() << "a Trainer on cuda without a GPU";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--device cuda"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts::wl
