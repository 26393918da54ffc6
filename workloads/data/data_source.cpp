#include "workloads/data/data_source.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "base/user_paths.h"
#include "workloads/data/cifar10.h"
#include "workloads/data/held_out.h"
#include "workloads/data/mnist.h"
#include "workloads/data/synthetic.h"
#include "workloads/data/text_file.h"

namespace ts::data {

std::int64_t DataInfo::sampleElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : sampleShape) n *= d;
  return n;
}

nlohmann::json Dataset::identity() const {
  const DataInfo& i = info();
  return {{"kind", i.name}, {"size", i.size}, {"sample_shape", i.sampleShape}};
}

namespace {
std::shared_ptr<const Dataset> requireDataset(std::shared_ptr<const Dataset> d) {
  if (!d) throw Error("a data source needs a dataset");
  return d;
}
}  // namespace

DataSource::DataSource(std::shared_ptr<const Dataset> dataset, std::uint64_t seed, std::int64_t globalBatch, Shard shard,
                       Augment augment)
    : dataset_(requireDataset(std::move(dataset))),
      seed_(seed),
      globalBatch_(globalBatch),
      shard_(shard),
      order_(seed, dataset_->info().size),
      augment_(augment) {
  if (augment != Augment::kNone && (dataset_->info().task != Task::kClassification || dataset_->info().sampleShape.size() != 3))
    throw UsageError(
        fmt::format("--augment {} is for images [C, H, W]; {} samples are not", nameOf(augment), dataset_->info().name));
  if (globalBatch < 1) throw UsageError(fmt::format("global batch {} is below 1", globalBatch));
  if (shard.count < 1 || shard.rank < 0 || shard.rank >= shard.count)
    throw Error(fmt::format("data shard {} of {} does not exist", shard.rank, shard.count));
  if (globalBatch % shard.count != 0)
    throw UsageError(
        fmt::format("global batch {} does not divide evenly among {} data-parallel ranks", globalBatch, shard.count));
}

DataSource DataSource::forShard(Shard shard) const { return DataSource(dataset_, seed_, globalBatch_, shard, augment_); }

Batch DataSource::batch(std::int64_t step) const {
  if (step < 0) throw Error(fmt::format("batch of step {}: steps count from 0", step));
  const DataInfo& info = dataset_->info();
  const std::int64_t rows = localBatch();
  const std::int64_t perSample = info.sampleElements();
  const bool lm = info.task == Task::kLanguageModel;
  Batch b;
  b.step = step;
  b.task = info.task;
  b.inputShape.push_back(rows);
  b.inputShape.insert(b.inputShape.end(), info.sampleShape.begin(), info.sampleShape.end());
  b.targetShape = lm ? std::vector<std::int64_t>{rows, info.sampleShape[0]} : std::vector<std::int64_t>{rows};
  const std::int64_t perTarget = lm ? info.sampleShape[0] : 1;
  if (lm)
    b.tokens.resize(static_cast<std::size_t>(rows * perSample));
  else
    b.features.resize(static_cast<std::size_t>(rows * perSample));
  b.targets.resize(static_cast<std::size_t>(rows * perTarget));
  b.sampleIndices.resize(static_cast<std::size_t>(rows));
  // This rank's rows are its contiguous part of the global batch (see the header).
  const std::int64_t first = step * globalBatch_ + shard_.rank * rows;
  b.firstPosition = first;
  std::vector<float> scratch;
  for (std::int64_t j = 0; j < rows; ++j) {
    const std::int64_t index = order_.index(first + j);
    b.sampleIndices[static_cast<std::size_t>(j)] = index;
    dataset_->sample(index, lm ? nullptr : b.features.data() + j * perSample, lm ? b.tokens.data() + j * perSample : nullptr,
                     b.targets.data() + j * perTarget);
    if (augment_ == Augment::kCropFlip) {
      const std::vector<std::int64_t>& s = info.sampleShape;
      applyCropFlip(b.features.data() + j * perSample, s[0], s[1], s[2], drawCropFlip(seed_, first + j), scratch);
    }
  }
  return b;
}

double DataSource::epochsAfter(std::int64_t steps) const {
  return static_cast<double>(steps) * static_cast<double>(globalBatch_) / static_cast<double>(info().size);
}

nlohmann::json DataSource::identity() const {
  nlohmann::json j = {{"dataset", dataset_->identity()}, {"seed", seed_}, {"global_batch", globalBatch_}};
  if (augment_ != Augment::kNone) j["augment"] = nameOf(augment_);
  return j;
}

namespace {

// --data as given: "kind" or "kind:argument".
struct DataSpec {
  std::string kind, arg;
  bool hasArg = false;
};

DataSpec parseSpec(const std::string& spec) {
  const auto colon = spec.find(':');
  DataSpec s;
  s.kind = spec.substr(0, colon);
  s.hasArg = colon != std::string::npos;
  if (s.hasArg) s.arg = spec.substr(colon + 1);
  return s;
}

// What the spec says of itself and the task: a known source, the argument it needs, data the model trains on.
void checkSpec(const DataOptions& o, const DataSpec& s) {
  const bool lm = o.task == Task::kLanguageModel;
  auto needsArg = [&](const char* noun, const char* placeholder) {
    if (!s.hasArg || s.arg.empty()) throw UsageError(fmt::format("{} needs a {}: {}:{}", s.kind, noun, s.kind, placeholder));
  };
  if (s.kind == "synthetic") {
    if (s.hasArg) throw UsageError("synthetic takes no argument");
  } else if (s.kind == "mnist" || s.kind == "cifar10") {
    needsArg("directory", "DIR");
    if (lm) throw UsageError(fmt::format("{} is an image dataset; a language model trains on text:FILE or synthetic", s.kind));
  } else if (s.kind == "text") {
    needsArg("file", "FILE");
    if (!lm) throw UsageError("text is for language models; a classifier trains on synthetic, mnist:DIR or cifar10:DIR");
  } else {
    throw UsageError(fmt::format("unknown data source '{}' (expected synthetic, mnist:DIR, cifar10:DIR or text:FILE)", s.kind));
  }
}

std::shared_ptr<const Dataset> makeDataset(const DataOptions& o, const DataSpec& s) {
  checkSpec(o, s);
  if (s.kind == "synthetic") {
    std::shared_ptr<const Dataset> train;
    if (o.task == Task::kLanguageModel)
      train = std::make_shared<SyntheticTokens>(o.seed, o.seqLen, o.vocab, o.syntheticSize);
    else
      train = std::make_shared<SyntheticClassification>(o.seed, o.sampleShape, o.classes, o.syntheticSize);
    if (o.split == Split::kTrain) return train;
    return std::make_shared<GeneratedHeldOut>(train, std::max<std::int64_t>(1, o.syntheticSize / 10));
  }
  if (s.kind == "mnist") return std::make_shared<Mnist>(s.arg, o.split);
  if (s.kind == "cifar10") return std::make_shared<Cifar10>(s.arg, o.split);
  return std::make_shared<TextFile>(s.arg, o.seqLen, o.split);
}

// The files the source reads for the split, found as its reader finds them; none is opened.
std::vector<std::string> filesOf(const DataOptions& o, const DataSpec& s) {
  if (s.kind == "mnist") return Mnist::files(s.arg, o.split);
  if (s.kind == "cifar10") return Cifar10::files(s.arg, o.split);
  if (s.kind == "text") return {s.arg};
  return {};
}

// One line that says which --data it was about.
template <class F>
auto aboutSpec(const std::string& spec, F&& f) {
  try {
    return f();
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--data {}: {}", spec, e.what()));
  }
}

}  // namespace

void checkDataSource(const DataOptions& options) {
  const DataSpec s = parseSpec(options.spec);
  aboutSpec(options.spec, [&] {
    checkSpec(options, s);
    // Is each a regular file this process may read: a FIFO would block the read that loads it, a directory or a device is
    // no dataset. (A minimal check; the readers' own refuse the same when they open the files.)
    for (const std::string& file : filesOf(options, s)) checkInputFile("file", file, std::numeric_limits<std::uintmax_t>::max());
  });
}

DataSource makeDataSource(const DataOptions& options) {
  const DataSpec s = parseSpec(options.spec);
  std::shared_ptr<const Dataset> dataset = aboutSpec(options.spec, [&] { return makeDataset(options, s); });
  // Held-out data is evaluated as it is.
  const Augment augment = options.split == Split::kTrain ? options.augment : Augment::kNone;
  return aboutSpec(options.spec,
                   [&] { return DataSource(std::move(dataset), options.seed, options.globalBatch, options.shard, augment); });
}

}  // namespace ts::data
