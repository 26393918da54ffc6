// Batches staged on the GPU by the loader thread (pinned buffer, side-stream copy, event): the device rows
// equal the host batch, slices see their own rows, slots are reused without one batch's upload overwriting
// another that is still held, a full pool falls back to the model's own upload, and a model's loss on a
// staged batch is bitwise the loss on the same batch uploaded synchronously. Skips where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "tests/gpu/gpu_test_support.h"
#include "workloads/batch_staging.h"
#include "workloads/data/prefetcher.h"
#include "workloads/models/model.h"

namespace ts::wl {
namespace {

data::Batch classificationBatch(std::int64_t rows, std::int64_t features, int classes, int seed) {
  data::Batch b;
  b.task = data::Task::kClassification;
  b.inputShape = {rows, features};
  b.targetShape = {rows};
  for (std::int64_t i = 0; i < rows * features; ++i)
    b.features.push_back(static_cast<float>((i * 7 + seed * 13) % 23) / 23.0f - 0.5f);
  for (std::int64_t i = 0; i < rows; ++i) b.targets.push_back(static_cast<std::int32_t>((i + seed) % classes));
  return b;
}

data::Batch tokenBatch(std::int64_t rows, std::int64_t seq, int vocab, int seed) {
  data::Batch b;
  b.task = data::Task::kLanguageModel;
  b.inputShape = b.targetShape = {rows, seq};
  for (std::int64_t i = 0; i < rows * seq; ++i) {
    b.tokens.push_back(static_cast<std::int32_t>((i * 31 + seed) % vocab));
    b.targets.push_back(static_cast<std::int32_t>((i * 31 + seed + 1) % vocab));
  }
  return b;
}

template <typename T>
std::vector<T> download(Device& d, const void* p, std::size_t n) {
  std::vector<T> out(n);
  d.download(out.data(), p, n * sizeof(T));
  return out;
}

TEST(BatchStaging, DeviceRowsEqualTheHostBatchAndSlicesTheirOwnRows) {
  REQUIRE_GPU();
  auto dev = Device::open({DeviceKind::kCuda});
  std::unique_ptr<BatchStager> stager;
  const data::Prefetcher::Prepare hook = stagingHook(*dev, 2, stager);
  ASSERT_TRUE(hook);
  data::Batch b = classificationBatch(6, 5, 4, 1);
  hook(b);
  ASSERT_TRUE(b.staged);
  const auto rows = stagedRows(*dev, b);
  ASSERT_TRUE(rows);
  EXPECT_EQ(download<float>(*dev, rows->inputs, b.features.size()), b.features);
  EXPECT_EQ(download<std::int32_t>(*dev, rows->targets, b.targets.size()), b.targets);
  const data::Batch s = b.slice(2, 5).slice(1, 3);  // rows 3 and 4
  const auto sliceRows = stagedRows(*dev, s);
  ASSERT_TRUE(sliceRows);
  EXPECT_EQ(download<float>(*dev, sliceRows->inputs, s.features.size()), s.features);
  EXPECT_EQ(download<std::int32_t>(*dev, sliceRows->targets, s.targets.size()), s.targets);

  data::Batch t = tokenBatch(3, 8, 50, 2);
  hook(t);
  const auto tokenRows = stagedRows(*dev, t.slice(1, 3));
  ASSERT_TRUE(tokenRows);
  EXPECT_EQ(download<std::int32_t>(*dev, tokenRows->inputs, 16), std::vector<std::int32_t>(t.tokens.begin() + 8, t.tokens.end()));
  EXPECT_EQ(download<std::int32_t>(*dev, tokenRows->targets, 16),
            std::vector<std::int32_t>(t.targets.begin() + 8, t.targets.end()));
}

TEST(BatchStaging, SlotsAreReusedOnlyWhenReleasedAndAFullPoolFallsBack) {
  REQUIRE_GPU();
  auto dev = Device::open({DeviceKind::kCuda});
  BatchStager stager(*dev, 2);
  data::Batch a = classificationBatch(64, 33, 5, 1), b = classificationBatch(64, 33, 5, 2), c = classificationBatch(64, 33, 5, 3);
  stager.stage(a);
  stager.stage(b);
  stager.stage(c);  // both slots held by a and b
  EXPECT_TRUE(a.staged && b.staged);
  EXPECT_FALSE(c.staged);
  EXPECT_FALSE(stagedRows(*dev, c));
  EXPECT_EQ(stager.batchesUnstaged(), 1);
  const std::vector<float> bHost = b.features;
  a = data::Batch();                       // releases a's slot
  for (int seed = 4; seed < 40; ++seed) {  // many reuses of the one free slot while b is held
    data::Batch d = classificationBatch(64, 33, 5, seed);
    stager.stage(d);
    ASSERT_TRUE(d.staged) << seed;
    EXPECT_EQ(download<float>(*dev, stagedRows(*dev, d)->inputs, d.features.size()), d.features) << seed;
  }
  EXPECT_EQ(download<float>(*dev, stagedRows(*dev, b)->inputs, bHost.size()), bHost);  // b untouched
  EXPECT_EQ(stager.batchesStaged(), 2 + 36);
}

TEST(BatchStaging, PrefetchedStagedBatchesArriveInOrder) {
  REQUIRE_GPU();
  auto dev = Device::open({DeviceKind::kCuda});
  std::unique_ptr<BatchStager> stager;
  data::Prefetcher loader([](std::int64_t step) { return classificationBatch(16, 9, 3, static_cast<int>(step)); }, 0, 2,
                          stagingHook(*dev, 2, stager), 20);
  for (std::int64_t step = 0; step < 20; ++step) {
    const data::Prefetcher::Next n = loader.next();
    const auto rows = stagedRows(*dev, n.batch);
    ASSERT_TRUE(rows) << "step " << step << ": depth + 2 slots must be enough for the prefetcher";
    EXPECT_EQ(download<float>(*dev, rows->inputs, n.batch.features.size()), n.batch.features) << step;
  }
}

double forwardLoss(Model& m, const data::Batch& b) {
  StepContext ctx;
  return m.forward(b, ctx);
}

TEST(BatchStaging, ModelLossOnAStagedBatchEqualsTheUploadedOne) {
  REQUIRE_GPU();
  auto dev = Device::open({DeviceKind::kCuda});
  std::unique_ptr<BatchStager> stager;
  const data::Prefetcher::Prepare hook = stagingHook(*dev, 2, stager);

  ModelConfig mlp = modelPreset(ModelKind::kMlp, "tiny");
  mlp.inputShape = {12};
  mlp.classes = 5;
  auto m = makeModel(mlp, 8, *dev);
  const data::Batch plain = classificationBatch(8, 12, 5, 3);
  data::Batch staged = plain;
  hook(staged);
  ASSERT_TRUE(staged.staged);
  EXPECT_EQ(forwardLoss(*m, staged), forwardLoss(*m, plain));

  ModelConfig gpt = modelPreset(ModelKind::kTransformer, "tiny");
  auto t = makeModel(gpt, 2, *dev);
  const data::Batch tokens = tokenBatch(2, gpt.seqLen, static_cast<int>(gpt.vocab), 5);
  data::Batch stagedTokens = tokens;
  hook(stagedTokens);
  ASSERT_TRUE(stagedTokens.staged);
  EXPECT_EQ(forwardLoss(*t, stagedTokens), forwardLoss(*t, tokens));
}

TEST(BatchStaging, NothingIsStagedOnTheCpu) {
  auto cpu = Device::open({DeviceKind::kCpu});
  std::unique_ptr<BatchStager> stager;
  EXPECT_FALSE(stagingHook(*cpu, 2, stager));
  EXPECT_FALSE(stager);
  data::Batch b = classificationBatch(2, 3, 2, 0);
  b.staged = std::make_shared<int>(0);  // whatever a hook put there, the CPU never reads it as device rows
  EXPECT_FALSE(stagedRows(*cpu, b));
}

}  // namespace
}  // namespace ts::wl
