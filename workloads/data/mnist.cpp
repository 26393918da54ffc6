#include "workloads/data/mnist.h"

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/data/dataset_files.h"

namespace ts::data {

namespace {
constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr float kMean = 0.1307f, kStd = 0.3081f;

}  // namespace

std::vector<std::string> Mnist::files(const std::string& dir, Split split) {
  requireDirectory(dir);
  // Some mirrors spell the names with a dot before "idx".
  if (split == Split::kTrain)
    return {findDatasetFile(dir, {"train-images-idx3-ubyte", "train-images.idx3-ubyte"}),
            findDatasetFile(dir, {"train-labels-idx1-ubyte", "train-labels.idx1-ubyte"})};
  return {findDatasetFile(dir, {"t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"}),
          findDatasetFile(dir, {"t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"})};
}

IdxImages checkIdxImages(std::span<const std::uint8_t> bytes, const std::string& origin) {
  if (bytes.size() < 16)
    throw UsageError(fmt::format("{} is {} bytes, too short for an IDX image header (16)", origin, bytes.size()));
  if (const std::uint32_t m = readBigEndian32(bytes.data()); m != kImagesMagic)
    throw UsageError(fmt::format("{} is not an IDX image file: magic number {}, expected {}", origin, m, kImagesMagic));
  const IdxImages h{readBigEndian32(bytes.data() + 4), readBigEndian32(bytes.data() + 8), readBigEndian32(bytes.data() + 12)};
  if (h.count == 0 || h.rows == 0 || h.cols == 0 || h.rows > 4096 || h.cols > 4096)
    throw UsageError(
        fmt::format("{} says it holds {} images of {}x{}, which is not a usable dataset", origin, h.count, h.rows, h.cols));
  const std::uint64_t imageBytes = 16 + h.count * h.rows * h.cols;  // < 2^57: no overflow
  if (bytes.size() != imageBytes)
    throw UsageError(fmt::format("{} is {} bytes, but {} images of {}x{} need {}{}", origin, bytes.size(), h.count, h.rows,
                                 h.cols, imageBytes, bytes.size() < imageBytes ? " (truncated)" : ""));
  return h;
}

std::uint64_t checkIdxLabels(std::span<const std::uint8_t> bytes, const std::string& origin) {
  if (bytes.size() < 8)
    throw UsageError(fmt::format("{} is {} bytes, too short for an IDX label header (8)", origin, bytes.size()));
  if (const std::uint32_t m = readBigEndian32(bytes.data()); m != kLabelsMagic)
    throw UsageError(fmt::format("{} is not an IDX label file: magic number {}, expected {}", origin, m, kLabelsMagic));
  const std::uint64_t n = readBigEndian32(bytes.data() + 4);
  if (bytes.size() != 8 + n)
    throw UsageError(fmt::format("{} is {} bytes, but {} labels need {}{}", origin, bytes.size(), n, 8 + n,
                                 bytes.size() < 8 + n ? " (truncated)" : ""));
  for (std::uint64_t i = 0; i < n; ++i)
    if (bytes[8 + i] > 9) throw UsageError(fmt::format("{}: label {} of sample {} is not a digit 0-9", origin, bytes[8 + i], i));
  return n;
}

Mnist::Mnist(const std::string& dir, Split split) : Mnist(dir, split, files(dir, split)) {}

Mnist::Mnist(const std::string& dir, Split split, const std::vector<std::string>& paths)
    : images_(MappedFile(paths[0])), labels_(MappedFile(paths[1])) {
  const IdxImages images = checkIdxImages({images_.data(), images_.size()}, images_.path());
  const std::uint64_t labels = checkIdxLabels({labels_.data(), labels_.size()}, labels_.path());
  if (labels != images.count)
    throw UsageError(fmt::format("{} has {} labels but {} has {} images", labels_.path(), labels, images_.path(), images.count));

  info_.name = "mnist";
  info_.origin = dir;
  info_.split = split;
  info_.task = Task::kClassification;
  info_.sampleShape = {1, static_cast<std::int64_t>(images.rows), static_cast<std::int64_t>(images.cols)};
  info_.classes = 10;
  info_.size = static_cast<std::int64_t>(images.count);
}

void Mnist::sample(std::int64_t index, float* features, std::int32_t*, std::int32_t* targets) const {
  const std::int64_t d = info_.sampleElements();
  const std::uint8_t* px = images_.data() + 16 + index * d;
  for (std::int64_t j = 0; j < d; ++j) features[j] = (static_cast<float>(px[j]) / 255.0f - kMean) / kStd;
  targets[0] = labels_.data()[8 + index];
}

nlohmann::json Mnist::identity() const {
  // Not the directory: the same files moved elsewhere are the same data.
  nlohmann::json j = {{"kind", "mnist"}, {"size", info_.size}, {"sample_shape", info_.sampleShape}};
  if (info_.split != Split::kTrain) j["split"] = nameOf(info_.split);
  return j;
}

}  // namespace ts::data
