// Data sources: batches are a pure function of the step, shards add up to the single-rank batch, the
// synthetic tasks carry a learnable signal, and real-dataset files are parsed and checked (each kind of
// damage gives one line naming the file).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "tests/unit/test_support.h"
#include "workloads/data/cifar10.h"
#include "workloads/data/counter_rng.h"
#include "workloads/data/data_source.h"
#include "workloads/data/mnist.h"
#include "workloads/data/prefetcher.h"
#include "workloads/data/sample_order.h"
#include "workloads/data/synthetic.h"

namespace ts::data {
namespace fs = std::filesystem;
using test::readBytes;
using test::usageError;
using test::writeBytes;

namespace {
fs::path scratch(const std::string& name) { return test::scratchDir("data", name); }

void putBigEndian(std::vector<std::uint8_t>& v, std::uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<std::uint8_t>(x >> s));
}

DataOptions syntheticOptions(Task task = Task::kClassification) {
  DataOptions o;
  o.task = task;
  o.seed = 7;
  o.globalBatch = 8;
  o.sampleShape = {12};
  o.classes = 5;
  o.seqLen = 16;
  o.vocab = 32;
  o.syntheticSize = 100;
  return o;
}

// The rank batches of one step, concatenated in rank order.
Batch concatenate(const std::vector<Batch>& parts) {
  Batch all = parts.front();
  for (std::size_t r = 1; r < parts.size(); ++r) {
    const Batch& p = parts[r];
    all.inputShape[0] += p.inputShape[0];
    all.targetShape[0] += p.targetShape[0];
    all.features.insert(all.features.end(), p.features.begin(), p.features.end());
    all.tokens.insert(all.tokens.end(), p.tokens.begin(), p.tokens.end());
    all.targets.insert(all.targets.end(), p.targets.begin(), p.targets.end());
    all.sampleIndices.insert(all.sampleIndices.end(), p.sampleIndices.begin(), p.sampleIndices.end());
  }
  return all;
}

void expectSameBatch(const Batch& a, const Batch& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.inputShape, b.inputShape);
  EXPECT_EQ(a.targetShape, b.targetShape);
  EXPECT_EQ(a.features, b.features);  // bitwise: float == on identical bits
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.targets, b.targets);
  EXPECT_EQ(a.sampleIndices, b.sampleIndices);
}
}  // namespace

TEST(DataSources, CounterRngNormalsHaveUnitVariance) {
  CounterRng rng(hashKey(1, 2, 3));
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = rng.normal();
    sum += x;
    sum2 += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0, 0.02);
  EXPECT_NE(hashKey(1, 2), hashKey(2, 1));
}

TEST(DataSources, EachEpochVisitsEverySampleOnce) {
  for (std::int64_t size : {1, 2, 3, 7, 64, 100, 1000, 4097}) {
    const SampleOrder order(11, size);
    std::vector<std::int64_t> epoch0, epoch1;
    for (std::int64_t p = 0; p < size; ++p) epoch0.push_back(order.index(p));
    for (std::int64_t p = size; p < 2 * size; ++p) epoch1.push_back(order.index(p));
    for (const auto* e : {&epoch0, &epoch1}) {
      std::set<std::int64_t> seen(e->begin(), e->end());
      EXPECT_EQ(static_cast<std::int64_t>(seen.size()), size) << "size " << size;
      EXPECT_EQ(*seen.begin(), 0);
      EXPECT_EQ(*seen.rbegin(), size - 1);
    }
    if (size >= 64) {
      EXPECT_NE(epoch0, epoch1) << "a new shuffle every epoch";
      std::vector<std::int64_t> identity(static_cast<std::size_t>(size));
      for (std::int64_t i = 0; i < size; ++i) identity[static_cast<std::size_t>(i)] = i;
      EXPECT_NE(epoch0, identity) << "shuffled";
    }
  }
  EXPECT_NE(SampleOrder(1, 1000).index(5), SampleOrder(2, 1000).index(5));
}

TEST(DataSources, BatchIsAPureFunctionOfTheStep) {
  for (Task task : {Task::kClassification, Task::kLanguageModel}) {
    const DataSource a = makeDataSource(syntheticOptions(task));
    const DataSource b = makeDataSource(syntheticOptions(task));
    expectSameBatch(a.batch(5), a.batch(5));
    expectSameBatch(a.batch(5), b.batch(5));    // another source, same options
    expectSameBatch(a.batch(40), b.batch(40));  // later epochs too (100 samples, 8 a step)
    EXPECT_NE(a.batch(5).targets, a.batch(6).targets);
    DataOptions other = syntheticOptions(task);
    other.seed = 8;
    EXPECT_NE(makeDataSource(other).batch(5).targets, a.batch(5).targets);
    EXPECT_EQ(a.identity(), b.identity());
    EXPECT_NE(a.identity(), makeDataSource(other).identity());
  }
}

TEST(DataSources, RankBatchesConcatenateToTheSingleRankBatch) {
  const fs::path dir = scratch("shards");
  std::vector<std::uint8_t> text;
  for (int i = 0; i < 300; ++i) text.push_back(static_cast<std::uint8_t>("the quick brown fox "[i % 20]));
  writeBytes(dir / "t.txt", text);
  for (Task task : {Task::kClassification, Task::kLanguageModel}) {
    for (const std::string& spec : {std::string("synthetic"), "text:" + (dir / "t.txt").string()}) {
      if (spec != "synthetic" && task != Task::kLanguageModel) continue;
      DataOptions o = syntheticOptions(task);
      o.spec = spec;
      o.globalBatch = 12;
      const DataSource single = makeDataSource(o);
      for (int ranks : {2, 3, 4, 6}) {
        for (std::int64_t step : {0, 3, 17}) {  // 17·12 crosses epoch boundaries of the 100 synthetic samples
          std::vector<Batch> parts;
          for (int r = 0; r < ranks; ++r) {
            o.shard = {r, ranks};
            const DataSource source = makeDataSource(o);
            EXPECT_EQ(source.localBatch(), 12 / ranks);
            parts.push_back(source.batch(step));
            // forShard shares the dataset and gives the same rows.
            expectSameBatch(parts.back(), single.forShard({r, ranks}).batch(step));
          }
          expectSameBatch(concatenate(parts), single.batch(step));
        }
      }
      o.shard = {0, 5};
      EXPECT_NE(usageError([&] { makeDataSource(o); }).find("global batch 12 does not divide evenly among 5"), std::string::npos);
    }
  }
  fs::remove_all(dir);
}

TEST(DataSources, SyntheticLabelsAreTheTeachersAndVaried) {
  const SyntheticClassification data(3, {20}, 6, 1 << 16);
  const DataSource source(std::make_shared<SyntheticClassification>(data), 3, 256);
  std::vector<int> counts(6, 0);
  double sum = 0, sum2 = 0;
  for (std::int64_t step = 0; step < 8; ++step) {
    const Batch b = source.batch(step);
    ASSERT_EQ(b.inputShape, (std::vector<std::int64_t>{256, 20}));
    ASSERT_EQ(b.targetShape, (std::vector<std::int64_t>{256}));
    for (std::int64_t i = 0; i < 256; ++i) {
      const int label = b.targets[static_cast<std::size_t>(i)];
      ASSERT_EQ(label, data.teacherLabel(&b.features[static_cast<std::size_t>(i * 20)]));  // a function of the inputs
      ++counts[static_cast<std::size_t>(label)];
    }
    for (float x : b.features) {
      sum += x;
      sum2 += static_cast<double>(x) * x;
    }
  }
  const double n = 8 * 256 * 20;
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(sum2 / n, 1.0, 0.05);
  // Unit-norm teacher rows: no class is rare, none dominates (2048 samples, 6 classes, ~341 each).
  for (int c : counts) {
    EXPECT_GT(c, 2048 / 6 / 3);
    EXPECT_LT(c, 2048 / 6 * 3);
  }
}

// Softmax regression trained by SGD on the synthetic data beats chance by far on samples it never saw:
// the labels carry a signal a model can learn, so the loss of a real run must fall.
TEST(DataSources, SyntheticClassificationIsLearnable) {
  const int d = 16, k = 4;
  DataOptions o = syntheticOptions();
  o.sampleShape = {d};
  o.classes = k;
  o.globalBatch = 64;
  o.syntheticSize = 1 << 16;
  const DataSource source = makeDataSource(o);
  std::vector<double> w(static_cast<std::size_t>(k * d), 0.0), bias(k, 0.0);
  auto logits = [&](const float* x, std::vector<double>& z) {
    for (int c = 0; c < k; ++c) {
      z[static_cast<std::size_t>(c)] = bias[static_cast<std::size_t>(c)];
      for (int j = 0; j < d; ++j) z[static_cast<std::size_t>(c)] += w[static_cast<std::size_t>(c * d + j)] * x[j];
    }
  };
  std::vector<double> z(k);
  for (std::int64_t step = 0; step < 300; ++step) {
    const Batch b = source.batch(step);
    std::vector<double> gw(w.size(), 0.0), gb(k, 0.0);
    for (std::int64_t i = 0; i < b.size(); ++i) {
      const float* x = &b.features[static_cast<std::size_t>(i * d)];
      logits(x, z);
      const double m = *std::max_element(z.begin(), z.end());
      double s = 0;
      for (double& v : z) s += (v = std::exp(v - m));
      for (int c = 0; c < k; ++c) {
        const double g = z[static_cast<std::size_t>(c)] / s - (c == b.targets[static_cast<std::size_t>(i)] ? 1.0 : 0.0);
        gb[static_cast<std::size_t>(c)] += g;
        for (int j = 0; j < d; ++j) gw[static_cast<std::size_t>(c * d + j)] += g * x[j];
      }
    }
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= 0.5 * gw[i] / 64;
    for (std::size_t c = 0; c < gb.size(); ++c) bias[c] -= 0.5 * gb[c] / 64;
  }
  int right = 0, total = 0;
  for (std::int64_t step = 900; step < 910; ++step) {  // positions never trained on (epoch 0, beyond step 300)
    const Batch b = source.batch(step);
    for (std::int64_t i = 0; i < b.size(); ++i) {
      logits(&b.features[static_cast<std::size_t>(i * d)], z);
      right += static_cast<int>(std::max_element(z.begin(), z.end()) - z.begin()) == b.targets[static_cast<std::size_t>(i)];
      ++total;
    }
  }
  EXPECT_GT(static_cast<double>(right) / total, 0.85) << "chance is 0.25";
}

TEST(DataSources, SyntheticImagesAreCHW) {
  DataOptions o = syntheticOptions();
  o.sampleShape = {3, 8, 8};
  o.classes = 10;
  o.globalBatch = 200;
  o.syntheticSize = 1000;
  const DataSource source = makeDataSource(o);
  const Batch b = source.batch(0);
  EXPECT_EQ(b.inputShape, (std::vector<std::int64_t>{200, 3, 8, 8}));
  EXPECT_EQ(source.info().classes, 10);
  const auto& teacher = static_cast<const SyntheticClassification&>(source.dataset());
  std::set<int> labels;
  for (std::int64_t i = 0; i < b.size(); ++i) {
    labels.insert(b.targets[static_cast<std::size_t>(i)]);
    EXPECT_EQ(b.targets[static_cast<std::size_t>(i)], teacher.teacherLabel(&b.features[static_cast<std::size_t>(i * 192)]));
  }
  EXPECT_GE(labels.size(), 8u);
}

TEST(DataSources, SyntheticTokensFollowTheSuccessorMap) {
  DataOptions o = syntheticOptions(Task::kLanguageModel);
  o.globalBatch = 32;
  o.seqLen = 64;
  o.vocab = 50;
  const DataSource source = makeDataSource(o);
  const auto& tokens = static_cast<const SyntheticTokens&>(source.dataset());
  const Batch b = source.batch(2);
  ASSERT_EQ(b.inputShape, (std::vector<std::int64_t>{32, 64}));
  ASSERT_EQ(b.targetShape, (std::vector<std::int64_t>{32, 64}));
  EXPECT_TRUE(b.features.empty());
  int follows = 0, total = 0;
  for (std::int64_t r = 0; r < 32; ++r)
    for (std::int64_t t = 0; t < 64; ++t) {
      const auto i = static_cast<std::size_t>(r * 64 + t);
      ASSERT_GE(b.tokens[i], 0);
      ASSERT_LT(b.tokens[i], 50);
      if (t + 1 < 64) {
        EXPECT_EQ(b.targets[i], b.tokens[i + 1]) << "targets are the inputs shifted by one";
      }
      follows += b.targets[i] == tokens.successor(b.tokens[i]);
      ++total;
    }
  // successor with probability 0.9, and by chance 1/50 of the rest.
  EXPECT_NEAR(static_cast<double>(follows) / total, 0.9 + 0.1 / 50, 0.03);
}

TEST(DataSources, TextWindowsAndShiftedTargets) {
  const fs::path dir = scratch("text");
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<std::uint8_t>((i * 37 + i / 7) % 256));
  writeBytes(dir / "corpus.txt", bytes);
  DataOptions o;
  o.spec = "text:" + (dir / "corpus.txt").string();
  o.task = Task::kLanguageModel;
  o.seqLen = 32;
  o.globalBatch = 16;
  const DataSource source = makeDataSource(o);
  EXPECT_EQ(source.info().vocab, 256);
  EXPECT_EQ(source.info().size, 900 - 32) << "the last tenth is held out: windows end before byte 900";
  for (std::int64_t step : {0, 1, 70}) {
    const Batch b = source.batch(step);
    ASSERT_EQ(b.inputShape, (std::vector<std::int64_t>{16, 32}));
    for (std::int64_t r = 0; r < 16; ++r) {
      const std::int64_t start = b.sampleIndices[static_cast<std::size_t>(r)];
      ASSERT_LE(start + 33, 900);
      for (std::int64_t t = 0; t < 32; ++t) {
        EXPECT_EQ(b.tokens[static_cast<std::size_t>(r * 32 + t)], bytes[static_cast<std::size_t>(start + t)]);
        EXPECT_EQ(b.targets[static_cast<std::size_t>(r * 32 + t)], bytes[static_cast<std::size_t>(start + t + 1)]);
      }
    }
  }
  // The held-out split: windows inside the last 100 bytes.
  o.split = Split::kHeldOut;
  const DataSource held = makeDataSource(o);
  EXPECT_EQ(held.info().size, 100 - 32);
  EXPECT_EQ(held.info().split, Split::kHeldOut);
  std::set<std::int64_t> heldStarts;
  for (std::int64_t step = 0; step < 5; ++step) {
    const Batch b = held.batch(step);
    for (std::int64_t r = 0; r < 16; ++r) {
      const std::int64_t i = b.sampleIndices[static_cast<std::size_t>(r)];
      heldStarts.insert(i);
      for (std::int64_t t = 0; t < 32; ++t) {
        ASSERT_EQ(b.tokens[static_cast<std::size_t>(r * 32 + t)], bytes[static_cast<std::size_t>(900 + i + t)]);
        ASSERT_EQ(b.targets[static_cast<std::size_t>(r * 32 + t)], bytes[static_cast<std::size_t>(900 + i + t + 1)]);
      }
    }
  }
  EXPECT_EQ(heldStarts.size(), 68u);
  // Too short to hold anything out: training reads the whole file, and the held-out split is one line.
  writeBytes(dir / "small.txt", std::vector<std::uint8_t>(50, 'b'));
  o.spec = "text:" + (dir / "small.txt").string();
  EXPECT_NE(usageError([&] { makeDataSource(o); }).find("too few to hold out 33 for evaluation"), std::string::npos);
  o.split = Split::kTrain;
  EXPECT_EQ(makeDataSource(o).info().size, 50 - 32);
  writeBytes(dir / "short.txt", std::vector<std::uint8_t>(32, 'a'));
  o.spec = "text:" + (dir / "short.txt").string();
  EXPECT_EQ(usageError([&] { makeDataSource(o); }), "--data " + o.spec + ": " + (dir / "short.txt").string() +
                                                        " has 32 bytes; a sequence of 32 tokens needs at least 33");
  o.spec = "text:" + (dir / "absent.txt").string();
  EXPECT_NE(usageError([&] { makeDataSource(o); }).find("does not exist"), std::string::npos);
  fs::remove_all(dir);
}

namespace {
// A tiny MNIST in IDX format: n images of rows×cols, pixel (i, j) = (i·31 + j) mod 256, label i mod 10.
void writeMnist(const fs::path& dir, std::uint32_t n, std::uint32_t rows = 28, std::uint32_t cols = 28,
                const std::string& set = "train") {
  std::vector<std::uint8_t> images, labels;
  putBigEndian(images, 2051);
  putBigEndian(images, n);
  putBigEndian(images, rows);
  putBigEndian(images, cols);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t j = 0; j < rows * cols; ++j) images.push_back(static_cast<std::uint8_t>((i * 31 + j) % 256));
  putBigEndian(labels, 2049);
  putBigEndian(labels, n);
  for (std::uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<std::uint8_t>(i % 10));
  writeBytes(dir / (set + "-images-idx3-ubyte"), images);
  writeBytes(dir / (set + "-labels-idx1-ubyte"), labels);
}

}  // namespace

TEST(DataSources, MnistFromIdxFiles) {
  const fs::path dir = scratch("mnist");
  writeMnist(dir, 20);
  DataOptions o;
  o.spec = "mnist:" + dir.string();
  o.globalBatch = 4;
  const DataSource source = makeDataSource(o);
  EXPECT_EQ(source.info().name, "mnist");
  EXPECT_EQ(source.info().size, 20);
  EXPECT_EQ(source.info().classes, 10);
  EXPECT_EQ(source.info().sampleShape, (std::vector<std::int64_t>{1, 28, 28}));
  std::set<std::int64_t> seen;
  for (std::int64_t step = 0; step < 5; ++step) {  // one epoch
    const Batch b = source.batch(step);
    EXPECT_EQ(b.inputShape, (std::vector<std::int64_t>{4, 1, 28, 28}));
    for (std::int64_t r = 0; r < 4; ++r) {
      const std::int64_t i = b.sampleIndices[static_cast<std::size_t>(r)];
      seen.insert(i);
      EXPECT_EQ(b.targets[static_cast<std::size_t>(r)], i % 10);
      for (std::int64_t j : {0, 5, 783}) {
        const float pixel = static_cast<float>((i * 31 + j) % 256);
        EXPECT_FLOAT_EQ(b.features[static_cast<std::size_t>(r * 784 + j)], (pixel / 255.0f - 0.1307f) / 0.3081f);
      }
    }
  }
  EXPECT_EQ(seen.size(), 20u);
  // The held-out split is the test set's files; without them, one line naming what is missing.
  o.split = Split::kHeldOut;
  EXPECT_NE(usageError([&] { makeDataSource(o); }).find("t10k-images-idx3-ubyte"), std::string::npos);
  writeMnist(dir, 7, 28, 28, "t10k");
  const DataSource held = makeDataSource(o);
  EXPECT_EQ(held.info().size, 7);
  EXPECT_EQ(held.info().split, Split::kHeldOut);
  EXPECT_NE(held.identity().dump(), source.identity().dump());
  fs::remove_all(dir);
}

TEST(DataSources, MnistDamageIsNamed) {
  const fs::path dir = scratch("mnist_bad");
  const std::string images = (dir / "train-images-idx3-ubyte").string();
  const std::string labels = (dir / "train-labels-idx1-ubyte").string();
  auto load = [&] { return usageError([&] { Mnist m(dir.string()); }); };

  EXPECT_EQ(usageError([&] { Mnist m((dir / "nowhere").string()); }),
            "directory " + (dir / "nowhere").string() + " does not exist");
  EXPECT_EQ(load(), dir.string() + " has no train-images-idx3-ubyte");
  writeMnist(dir, 10);
  fs::rename(images, images + ".gz");
  EXPECT_NE(load().find("has train-images-idx3-ubyte.gz but not train-images-idx3-ubyte: decompress it"), std::string::npos);
  fs::rename(images + ".gz", dir / "train-images.idx3-ubyte");  // the dotted spelling is accepted
  EXPECT_EQ(Mnist(dir.string()).info().size, 10);
  fs::remove(dir / "train-images.idx3-ubyte");

  writeMnist(dir, 10);
  const auto good = readBytes(images);
  auto damaged = good;
  damaged[3] = 0x01;  // magic 2049: a label file where images belong
  writeBytes(images, damaged);
  EXPECT_EQ(load(), images + " is not an IDX image file: magic number 2049, expected 2051");
  damaged = good;
  damaged.resize(good.size() - 100);
  writeBytes(images, damaged);
  EXPECT_EQ(load(), images + " is 7756 bytes, but 10 images of 28x28 need 7856 (truncated)");
  writeBytes(images, std::vector<std::uint8_t>(good.begin(), good.begin() + 10));
  EXPECT_NE(load().find("too short for an IDX image header"), std::string::npos);
  writeBytes(images, good);

  auto labelBytes = readBytes(labels);
  labelBytes[8 + 4] = 12;
  writeBytes(labels, labelBytes);
  EXPECT_EQ(load(), labels + ": label 12 of sample 4 is not a digit 0-9");
  writeMnist(dir, 10);
  labelBytes = readBytes(labels);
  labelBytes.pop_back();
  labelBytes[7] = 9;  // a consistent label file, but of 9 labels
  writeBytes(labels, labelBytes);
  EXPECT_EQ(load(), labels + " has 9 labels but " + images + " has 10 images");
  labelBytes[3] = 0x03;
  writeBytes(labels, labelBytes);
  EXPECT_EQ(load(), labels + " is not an IDX label file: magic number 2051, expected 2049");
  fs::remove_all(dir);
}

namespace {
// A tiny CIFAR-10: `records` records per file; record r of file f has label (f + r) mod 10 and pixel
// bytes (f·7 + r·3 + j) mod 256.
void writeCifar(const fs::path& dir, int records) {
  fs::create_directories(dir);
  for (int f = 1; f <= 5; ++f) {
    std::vector<std::uint8_t> bytes;
    for (int r = 0; r < records; ++r) {
      bytes.push_back(static_cast<std::uint8_t>((f + r) % 10));
      for (int j = 0; j < 3072; ++j) bytes.push_back(static_cast<std::uint8_t>((f * 7 + r * 3 + j) % 256));
    }
    writeBytes(dir / ("data_batch_" + std::to_string(f) + ".bin"), bytes);
  }
}
}  // namespace

TEST(DataSources, Cifar10FromBinaryBatches) {
  const fs::path dir = scratch("cifar");
  writeCifar(dir / "cifar-10-batches-bin", 3);  // as the archive unpacks: found one level down
  DataOptions o;
  o.spec = "cifar10:" + dir.string();
  o.globalBatch = 5;
  const DataSource source = makeDataSource(o);
  EXPECT_EQ(source.info().size, 15);
  EXPECT_EQ(source.info().sampleShape, (std::vector<std::int64_t>{3, 32, 32}));
  const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, stdev[3] = {0.2470f, 0.2435f, 0.2616f};
  std::set<std::int64_t> seen;
  for (std::int64_t step = 0; step < 3; ++step) {
    const Batch b = source.batch(step);
    for (std::int64_t row = 0; row < 5; ++row) {
      const std::int64_t i = b.sampleIndices[static_cast<std::size_t>(row)];
      seen.insert(i);
      const std::int64_t f = i / 3 + 1, r = i % 3;
      EXPECT_EQ(b.targets[static_cast<std::size_t>(row)], (f + r) % 10);
      for (int c = 0; c < 3; ++c)
        for (std::int64_t j : {0, 17, 1023}) {
          const float pixel = static_cast<float>((f * 7 + r * 3 + c * 1024 + j) % 256);
          EXPECT_FLOAT_EQ(b.features[static_cast<std::size_t>(row * 3072 + c * 1024 + j)], (pixel / 255.0f - mean[c]) / stdev[c]);
        }
    }
  }
  EXPECT_EQ(seen.size(), 15u);
  // The held-out split: test_batch.bin, beside the training files.
  o.split = Split::kHeldOut;
  EXPECT_NE(usageError([&] { makeDataSource(o); }).find("test_batch.bin"), std::string::npos);
  std::vector<std::uint8_t> test;
  for (int r = 0; r < 4; ++r) {
    test.push_back(static_cast<std::uint8_t>(r));
    for (int j = 0; j < 3072; ++j) test.push_back(static_cast<std::uint8_t>((r * 5 + j) % 256));
  }
  writeBytes(dir / "cifar-10-batches-bin" / "test_batch.bin", test);
  o.globalBatch = 4;
  const DataSource held = makeDataSource(o);
  EXPECT_EQ(held.info().size, 4);
  const Batch b = held.batch(0);
  for (std::int64_t row = 0; row < 4; ++row)
    EXPECT_EQ(b.targets[static_cast<std::size_t>(row)], b.sampleIndices[static_cast<std::size_t>(row)]);
  fs::remove_all(dir);
}

// Synthetic data's held-out split: the generator's next samples, past the training set's indices.
TEST(DataSources, SyntheticHeldOutIsTheGeneratorsNextSamples) {
  for (Task task : {Task::kClassification, Task::kLanguageModel}) {
    DataOptions o = syntheticOptions(task);  // 100 samples of 12 features
    o.seqLen = 8;
    o.vocab = 16;
    o.globalBatch = 5;
    const DataSource train = makeDataSource(o);
    o.split = Split::kHeldOut;
    const DataSource held = makeDataSource(o);
    EXPECT_EQ(held.info().size, 10);
    EXPECT_EQ(held.info().split, Split::kHeldOut);
    const Batch b = held.batch(1);
    const std::int64_t per = task == Task::kLanguageModel ? 8 : 12;
    std::vector<float> features(static_cast<std::size_t>(per));
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(per)), targets(static_cast<std::size_t>(per));
    for (std::int64_t r = 0; r < 5; ++r) {
      const std::int64_t i = b.sampleIndices[static_cast<std::size_t>(r)];
      ASSERT_LT(i, 10);
      const bool lm = task == Task::kLanguageModel;
      train.dataset().sample(100 + i, lm ? nullptr : features.data(), lm ? tokens.data() : nullptr, targets.data());
      if (lm) {
        for (std::int64_t t = 0; t < per; ++t)
          EXPECT_EQ(b.tokens[static_cast<std::size_t>(r * per + t)], tokens[static_cast<std::size_t>(t)]);
      } else {
        for (std::int64_t t = 0; t < per; ++t)
          EXPECT_EQ(b.features[static_cast<std::size_t>(r * per + t)], features[static_cast<std::size_t>(t)]);
        EXPECT_EQ(b.targets[static_cast<std::size_t>(r)], targets[0]);
      }
    }
    EXPECT_NE(held.identity().dump(), train.identity().dump());
  }
}

TEST(DataSources, Cifar10DamageIsNamed) {
  const fs::path dir = scratch("cifar_bad");
  auto load = [&] { return usageError([&] { Cifar10 c(dir.string()); }); };
  writeCifar(dir, 2);
  const fs::path third = dir / "data_batch_3.bin";
  fs::remove(third);
  EXPECT_EQ(load(), dir.string() + " has no data_batch_3.bin");
  writeCifar(dir, 2);
  auto bytes = readBytes(third);
  bytes.resize(bytes.size() - 1);
  writeBytes(third, bytes);
  EXPECT_EQ(load(),
            third.string() + " is 6145 bytes, not a whole number of 3073-byte records (label + 3x32x32 pixels) (truncated?)");
  writeCifar(dir, 2);
  bytes = readBytes(third);
  bytes[3073] = 57;
  writeBytes(third, bytes);
  EXPECT_EQ(load(), third.string() + ": label 57 of record 1 is not a class 0-9 (is this the CIFAR-100 file?)");
  writeBytes(third, {});
  EXPECT_NE(load().find("is 0 bytes"), std::string::npos);
  fs::remove_all(dir);
}

// A data file truncated while training (`: > t.txt`) ends the run with one line naming it; mapped, it was SIGBUS.
TEST(DataSources, DataFilesTruncatedWhileTrainingAreOneLine) {
  const fs::path dir = scratch("truncated");
  writeBytes(dir / "t.txt", std::vector<std::uint8_t>(1000, 'a'));
  fs::create_directories(dir / "mnist");
  writeMnist(dir / "mnist", 20);
  writeCifar(dir / "cifar", 4);
  for (const std::string& spec :
       {"text:" + (dir / "t.txt").string(), "mnist:" + (dir / "mnist").string(), "cifar10:" + (dir / "cifar").string()}) {
    DataOptions o;
    o.spec = spec;
    o.task = spec.starts_with("text:") ? Task::kLanguageModel : Task::kClassification;
    o.seqLen = 16;
    o.globalBatch = 4;
    const DataSource source = makeDataSource(o);
    source.batch(0);
    // Every file of the dataset emptied: whichever the next batch reads, the line names it.
    std::vector<fs::path> files = {dir / "t.txt"};
    if (spec.starts_with("mnist:")) files = {dir / "mnist" / "train-images-idx3-ubyte"};
    if (spec.starts_with("cifar10:")) {
      files.clear();
      for (int f = 1; f <= 5; ++f) files.push_back(dir / "cifar" / ("data_batch_" + std::to_string(f) + ".bin"));
    }
    const std::string before = std::to_string(fs::file_size(files[0]));
    for (const auto& f : files) fs::resize_file(f, 0);
    const std::string what = usageError([&] { source.batch(1); });
    EXPECT_TRUE(what.starts_with(files[0].parent_path().string() + "/")) << what;
    EXPECT_TRUE(what.ends_with(" changed while in use: it is 0 bytes now, " + before + " when it was opened")) << what;
  }
  fs::remove_all(dir);
}

TEST(DataSources, SpecErrorsAreOneClearLine) {
  DataOptions o;
  o.spec = "imagenet:/x";
  EXPECT_EQ(usageError([&] { makeDataSource(o); }),
            "--data imagenet:/x: unknown data source 'imagenet' (expected synthetic, mnist:DIR, cifar10:DIR or text:FILE)");
  o.spec = "mnist";
  EXPECT_EQ(usageError([&] { makeDataSource(o); }), "--data mnist: mnist needs a directory: mnist:DIR");
  o.spec = "synthetic:3";
  EXPECT_EQ(usageError([&] { makeDataSource(o); }), "--data synthetic:3: synthetic takes no argument");
  o.spec = "mnist:/definitely/not/here";
  EXPECT_EQ(usageError([&] { makeDataSource(o); }),
            "--data mnist:/definitely/not/here: directory /definitely/not/here does not exist");
  o.spec = "cifar10:/x";
  o.task = Task::kLanguageModel;
  EXPECT_NE(usageError([&] { makeDataSource(o); }).find("cifar10 is an image dataset"), std::string::npos);
  o.spec = "text:/x";
  o.task = Task::kClassification;
  EXPECT_NE(usageError([&] { makeDataSource(o); }).find("text is for language models"), std::string::npos);
  o.spec = "synthetic";
  o.classes = 1;
  EXPECT_NE(usageError([&] { makeDataSource(o); }).find("at least 2 classes"), std::string::npos);
}

// The check a suite makes of every train step's data before its first step (issue #34): what makeDataSource would
// refuse for the spec, and every file it would read there and a regular file, none opened (a FIFO would block the open).
TEST(DataSources, CheckDataSourceFindsEveryFileWithoutReadingOne) {
  const fs::path dir = scratch("check");
  DataOptions o;
  o.spec = "imagenet:/x";
  EXPECT_EQ(usageError([&] { checkDataSource(o); }), usageError([&] { makeDataSource(o); }));
  o.spec = "mnist:" + dir.string();
  EXPECT_EQ(usageError([&] { checkDataSource(o); }),
            fmt::format("--data {}: {} has no train-images-idx3-ubyte", o.spec, dir.string()));
  writeMnist(dir, 20);
  EXPECT_NO_THROW(checkDataSource(o));
  o.split = Split::kHeldOut;  // the held-out split's own files
  EXPECT_NE(usageError([&] { checkDataSource(o); }).find("has no t10k-images-idx3-ubyte"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  o.spec = "text:" + (dir / "fifo").string();
  o.task = Task::kLanguageModel;
  o.split = Split::kTrain;
  EXPECT_EQ(usageError([&] { checkDataSource(o); }),
            fmt::format("--data {}: file {}: is a FIFO, not a regular file", o.spec, (dir / "fifo").string()));
  o.spec = "text:" + dir.string();
  EXPECT_EQ(usageError([&] { checkDataSource(o); }),
            fmt::format("--data {}: file {}: is a directory, not a regular file", o.spec, dir.string()));
  o.spec = "synthetic";
  EXPECT_NO_THROW(checkDataSource(o));
}

TEST(DataSources, SliceTakesRows) {
  const Batch b = makeDataSource(syntheticOptions(Task::kLanguageModel)).batch(1);
  const Batch s = b.slice(2, 5);
  EXPECT_EQ(s.inputShape, (std::vector<std::int64_t>{3, 16}));
  EXPECT_EQ(s.targetShape, (std::vector<std::int64_t>{3, 16}));
  EXPECT_EQ(s.tokens, std::vector<std::int32_t>(b.tokens.begin() + 32, b.tokens.begin() + 80));
  EXPECT_EQ(s.sampleIndices, std::vector<std::int64_t>(b.sampleIndices.begin() + 2, b.sampleIndices.begin() + 5));
  EXPECT_THROW(b.slice(3, 9), Error);
}

TEST(DataSources, SliceSharesTheStagedCopyFromItsFirstRow) {
  Batch b = makeDataSource(syntheticOptions(Task::kLanguageModel)).batch(1);
  b.staged = std::make_shared<int>(7);
  b.stagedRow = 1;  // itself a slice of a larger staged batch
  const Batch s = b.slice(2, 5);
  EXPECT_EQ(s.staged, b.staged);  // the same device copy, kept alive by every slice
  EXPECT_EQ(s.stagedRow, 3);
  EXPECT_EQ(s.slice(1, 2).stagedRow, 4);
  EXPECT_EQ(b.staged.use_count(), 2);
}

TEST(DataPrefetcher, DeliversStepsInOrderAndRunsThePrepareHookInTheLoaderThread) {
  const DataSource source = makeDataSource(syntheticOptions());
  const auto mainThread = std::this_thread::get_id();
  std::atomic<int> prepared{0};
  Prefetcher loader(
      source, 3, 2,
      [&](Batch& b) {
        EXPECT_NE(std::this_thread::get_id(), mainThread);
        b.staged = std::make_shared<std::int64_t>(b.step * 10);
        ++prepared;
      },
      13);
  for (std::int64_t step = 3; step < 13; ++step) {
    EXPECT_EQ(loader.nextStep(), step);
    Prefetcher::Next n = loader.next();
    EXPECT_GE(n.waitSeconds, 0.0);
    expectSameBatch(n.batch, source.batch(step));
    ASSERT_TRUE(n.batch.staged);
    EXPECT_EQ(*std::static_pointer_cast<std::int64_t>(n.batch.staged), step * 10);
  }
  EXPECT_EQ(prepared.load(), 10);
  EXPECT_THROW(loader.next(), Error);  // past the end
}

TEST(DataPrefetcher, ProducesAheadAndTimesTheWait) {
  std::atomic<std::int64_t> produced{-1};
  Prefetcher loader(
      [&](std::int64_t step) {
        std::this_thread::sleep_for(std::chrono::milliseconds(step == 0 ? 50 : 0));
        produced = step;
        Batch b;
        b.step = step;
        return b;
      },
      0, 3);
  const auto first = loader.next();
  EXPECT_GT(first.waitSeconds, 0.03);  // the first batch took 50 ms to make: that was data time
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (produced.load() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced.load(), 3) << "steps 1..3 ready ahead, and no further: the queue holds 3";
  const auto second = loader.next();
  EXPECT_EQ(second.batch.step, 1);
  EXPECT_LT(second.waitSeconds, 0.01);
}  // destroyed with a full queue and a blocked producer: joins without hanging

TEST(DataPrefetcher, RethrowsTheLoadersErrorAfterTheBatchesBeforeIt) {
  Prefetcher loader(
      [](std::int64_t step) {
        if (step == 4) throw UsageError("--data text:/f: /f vanished");
        Batch b;
        b.step = step;
        return b;
      },
      2, 4);
  EXPECT_EQ(loader.next().batch.step, 2);
  EXPECT_EQ(loader.next().batch.step, 3);
  for (int again = 0; again < 2; ++again) {
    try {
      loader.next();
      ADD_FAILURE() << "no error";
    } catch (const UsageError& e) {
      EXPECT_STREQ(e.what(), "--data text:/f: /f vanished");
    }
  }
}

TEST(DataPrefetcher, StopsPromptlyWhileTheConsumerIsAway) {
  std::atomic<int> calls{0};
  {
    Prefetcher loader(
        [&](std::int64_t step) {
          ++calls;
          Batch b;
          b.step = step;
          return b;
        },
        0, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(calls.load(), 3);  // depth 2 ready, at most one more being made when the queue filled
}

}  // namespace ts::data

namespace ts::data {
namespace {

// The crop and flip against their definition: output (y, x) is the padded image's (y + dy, x' + dx), x'
// mirrored when flipped, padding outside; the draws cover every offset and both flips.
TEST(DataAugment, CropAndFlipMoveThePixelsTheDrawSays) {
  const std::int64_t C = 2, H = 5, W = 6;
  std::vector<float> image(static_cast<std::size_t>(C * H * W));
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(i + 1);
  std::vector<float> scratch;
  for (const CropFlip c : {CropFlip{4, 4, false}, CropFlip{0, 8, true}, CropFlip{7, 2, true}}) {
    std::vector<float> out = image;
    applyCropFlip(out.data(), C, H, W, c, scratch);
    for (std::int64_t ch = 0; ch < C; ++ch)
      for (std::int64_t y = 0; y < H; ++y)
        for (std::int64_t x = 0; x < W; ++x) {
          const std::int64_t sy = y + c.dy - 4, sx = (c.flip ? W - 1 - x : x) + c.dx - 4;
          const float want =
              sy >= 0 && sy < H && sx >= 0 && sx < W ? image[static_cast<std::size_t>((ch * H + sy) * W + sx)] : 0.0f;
          ASSERT_EQ(out[static_cast<std::size_t>((ch * H + y) * W + x)], want) << c.dx << " " << c.dy << " " << c.flip;
        }
  }
  std::vector<float> same = image;
  applyCropFlip(same.data(), C, H, W, CropFlip{4, 4, false}, scratch);
  EXPECT_EQ(same, image) << "the centre window without a flip is the image";
  std::set<int> dxs;
  int flips = 0;
  for (std::int64_t p = 0; p < 2000; ++p) {
    const CropFlip c = drawCropFlip(9, p);
    dxs.insert(c.dx);
    flips += c.flip;
    ASSERT_TRUE(c.dy >= 0 && c.dy <= 8);
  }
  EXPECT_EQ(dxs.size(), 9u);
  EXPECT_NEAR(flips, 1000, 120);
}

// Augmented batches stay a pure function of the step, and the ranks' batches still concatenate to the
// one-rank batch (the draws follow the global sample position); held-out data is not augmented.
TEST(DataAugment, AugmentedBatchesArePureAndTheSameInEveryLayout) {
  DataOptions o;
  o.sampleShape = {3, 8, 8};
  o.globalBatch = 8;
  o.augment = Augment::kCropFlip;
  const DataSource one = makeDataSource(o);
  const Batch a = one.batch(3), again = one.batch(3);
  EXPECT_EQ(a.features, again.features);
  o.augment = Augment::kNone;
  EXPECT_NE(makeDataSource(o).batch(3).features, a.features);
  o.augment = Augment::kCropFlip;
  o.shard = {1, 2};
  const Batch second = makeDataSource(o).batch(3);
  EXPECT_TRUE(std::equal(second.features.begin(), second.features.end(), a.features.begin() + a.features.size() / 2));
  o.shard = {};
  o.split = Split::kHeldOut;
  o.augment = Augment::kCropFlip;
  const DataSource held = makeDataSource(o);
  o.augment = Augment::kNone;
  EXPECT_EQ(held.batch(0).features, makeDataSource(o).batch(0).features);
  DataOptions flat;
  flat.augment = Augment::kCropFlip;  // [784]: not an image
  EXPECT_NE(usageError([&] { makeDataSource(flat); }).find("--augment crop-flip is for images [C, H, W]"), std::string::npos);
}

}  // namespace
}  // namespace ts::data
