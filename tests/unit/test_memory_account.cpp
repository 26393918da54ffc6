// The memory account's pieces: the ZeRO paper's formulas per layout, the allocator's counters by kind,
// and the per-rank limit refusing an allocation before taking anything.
#include <gtest/gtest.h>

#include "workloads/device.h"
#include "workloads/memory_account.h"
#include "workloads/tensor.h"

namespace ts::wl {
namespace {

TEST(ModelStateFormula, IsTheZeroPapersForEachStageAndTheParameterServer) {
  ModelStateFacts f;
  f.elements = 1000;  // Psi: 4000 bytes a copy
  f.replicas = 4;
  const double psi = 4000;
  for (int zero = 0; zero <= 3; ++zero) {
    f.zero = zero;
    const ModelStateBytes b = modelStateFormula(f);
    EXPECT_DOUBLE_EQ(b.parameters, zero >= 3 ? psi / 4 : psi) << zero;
    EXPECT_DOUBLE_EQ(b.gradients, zero >= 2 ? psi / 4 : psi) << zero;
    EXPECT_DOUBLE_EQ(b.optimizer, zero >= 1 ? 2 * psi / 4 : 2 * psi) << zero;  // Adam: m and v
    EXPECT_DOUBLE_EQ(b.masterWeights, 0) << zero;
  }
  f.zero = 0;
  EXPECT_DOUBLE_EQ(modelStateFormula(f).total(), 16 * 1000);  // the paper's 16 bytes per parameter in float32 with Adam
  f.optimizerSlots = 1;                                       // SGD's momentum
  f.masterWeights = true;
  f.zero = 1;
  EXPECT_DOUBLE_EQ(modelStateFormula(f).optimizer, psi / 4);
  EXPECT_DOUBLE_EQ(modelStateFormula(f).masterWeights, psi / 4);  // sharded with the optimizer state
  ModelStateFacts ps;
  ps.elements = 1000;
  ps.replicas = 4;
  ps.parameterServer = true;
  ps.psShards = 2;
  ps.server = true;
  EXPECT_DOUBLE_EQ(modelStateFormula(ps).optimizer, 2 * psi / 2);
  ps.server = false;
  EXPECT_DOUBLE_EQ(modelStateFormula(ps).optimizer, 0);
  EXPECT_DOUBLE_EQ(modelStateFormula(ps).gradients, psi);
}

TEST(MemoryCounters, KeepEachKindsPeakAndTheTotalsPeak) {
  MemoryCounters c;
  c.add(MemoryKind::kParameters, 100);
  c.add(MemoryKind::kGradients, 50);
  c.remove(MemoryKind::kGradients, 50);
  c.add(MemoryKind::kOptimizer, 30);
  EXPECT_EQ(c.peakOf(MemoryKind::kGradients), 50u);
  EXPECT_EQ(c.inUseOf(MemoryKind::kGradients), 0u);
  EXPECT_EQ(c.totalPeak, 150u);
  EXPECT_EQ(c.total, 130u);
  c.resetPeaks();
  EXPECT_EQ(c.peakOf(MemoryKind::kGradients), 0u);
  EXPECT_EQ(c.totalPeak, 130u);
}

TEST(DeviceMemory, TheLimitRefusesAnAllocationBeforeTakingAnythingAndReleaseGivesBack) {
  auto device = Device::open(DeviceSpec{});
  device->setMemoryLimit(1000);
  Arena arena(*device);
  Tensor a = arena.tensor({150}, MemoryKind::kParameters);  // 600 bytes
  EXPECT_EQ(device->memory().inUseOf(MemoryKind::kParameters), 600u);
  try {
    arena.tensor({150}, MemoryKind::kGradients);
    FAIL() << "a second 600 bytes fit under a 1000-byte limit";
  } catch (const MemoryLimitExceeded& e) {
    EXPECT_EQ(e.kind, MemoryKind::kGradients);
    EXPECT_EQ(e.bytes, 600u);
    EXPECT_EQ(e.inUse, 600u);
    EXPECT_STREQ(e.what(), "--memory-limit 1000 B: 600 B more for gradients with 600 B in use");
  }
  EXPECT_EQ(device->memory().total, 600u);
  arena.release(a);
  EXPECT_EQ(a.data, nullptr);
  EXPECT_EQ(device->memory().total, 0u);
  EXPECT_EQ(device->memory().peakOf(MemoryKind::kParameters), 600u);
  Tensor b = arena.tensor({150}, MemoryKind::kGradients);  // fits again
  EXPECT_NE(b.data, nullptr);
  EXPECT_THROW(arena.release(a), Error);  // not held any more
}

}  // namespace
}  // namespace ts::wl
