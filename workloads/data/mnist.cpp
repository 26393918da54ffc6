#include "workloads/data/mnist.h"

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/data/dataset_files.h"

namespace ts::data {

namespace {
constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr float kMean = 0.1307f, kStd = 0.3081f;

// Some mirrors spell the names with a dot before "idx".
MappedFile openIdx(const std::string& dir, const char* dashed, const char* dotted) {
  requireDirectory(dir);
  return MappedFile(findDatasetFile(dir, {dashed, dotted}));
}
}  // namespace

Mnist::Mnist(const std::string& dir)
    : images_(openIdx(dir, "train-images-idx3-ubyte", "train-images.idx3-ubyte")),
      labels_(openIdx(dir, "train-labels-idx1-ubyte", "train-labels.idx1-ubyte")) {
  const std::string& ip = images_.path();
  const std::string& lp = labels_.path();
  if (images_.size() < 16)
    throw UsageError(fmt::format("{} is {} bytes, too short for an IDX image header (16)", ip, images_.size()));
  if (const std::uint32_t m = readBigEndian32(images_.data()); m != kImagesMagic)
    throw UsageError(fmt::format("{} is not an IDX image file: magic number {}, expected {}", ip, m, kImagesMagic));
  const std::uint64_t n = readBigEndian32(images_.data() + 4);
  const std::uint64_t rows = readBigEndian32(images_.data() + 8), cols = readBigEndian32(images_.data() + 12);
  if (n == 0 || rows == 0 || cols == 0 || rows > 4096 || cols > 4096)
    throw UsageError(fmt::format("{} says it holds {} images of {}x{}, which is not a usable dataset", ip, n, rows, cols));
  const std::uint64_t imageBytes = 16 + n * rows * cols;
  if (images_.size() != imageBytes)
    throw UsageError(fmt::format("{} is {} bytes, but {} images of {}x{} need {}{}", ip, images_.size(), n, rows, cols,
                                 imageBytes, images_.size() < imageBytes ? " (truncated)" : ""));

  if (labels_.size() < 8)
    throw UsageError(fmt::format("{} is {} bytes, too short for an IDX label header (8)", lp, labels_.size()));
  if (const std::uint32_t m = readBigEndian32(labels_.data()); m != kLabelsMagic)
    throw UsageError(fmt::format("{} is not an IDX label file: magic number {}, expected {}", lp, m, kLabelsMagic));
  const std::uint64_t nl = readBigEndian32(labels_.data() + 4);
  if (labels_.size() != 8 + nl)
    throw UsageError(fmt::format("{} is {} bytes, but {} labels need {}{}", lp, labels_.size(), nl, 8 + nl,
                                 labels_.size() < 8 + nl ? " (truncated)" : ""));
  if (nl != n) throw UsageError(fmt::format("{} has {} labels but {} has {} images", lp, nl, ip, n));
  for (std::uint64_t i = 0; i < n; ++i)
    if (labels_.data()[8 + i] > 9)
      throw UsageError(fmt::format("{}: label {} of sample {} is not a digit 0-9", lp, labels_.data()[8 + i], i));

  info_.name = "mnist";
  info_.origin = dir;
  info_.task = Task::kClassification;
  info_.sampleShape = {1, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
  info_.classes = 10;
  info_.size = static_cast<std::int64_t>(n);
}

void Mnist::sample(std::int64_t index, float* features, std::int32_t*, std::int32_t* targets) const {
  const std::int64_t d = info_.sampleElements();
  const std::uint8_t* px = images_.data() + 16 + index * d;
  for (std::int64_t j = 0; j < d; ++j) features[j] = (static_cast<float>(px[j]) / 255.0f - kMean) / kStd;
  targets[0] = labels_.data()[8 + index];
}

nlohmann::json Mnist::identity() const {
  // Not the directory: the same files moved elsewhere are the same data.
  return {{"kind", "mnist"}, {"size", info_.size}, {"sample_shape", info_.sampleShape}};
}

}  // namespace ts::data
