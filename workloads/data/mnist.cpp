#include "workloads/data/mnist.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/data/dataset_files.h"

namespace ts::data {

namespace {
constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr float kMean = 0.1307f, kStd = 0.3081f;

constexpr std::size_t kImagesHeader = 16, kLabelsHeader = 8;
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

IdxImages checkIdxImages(std::span<const std::uint8_t> header, std::uint64_t fileBytes, const std::string& origin) {
  if (fileBytes < kImagesHeader || header.size() < kImagesHeader)
    throw UsageError(fmt::format("{} is {} bytes, too short for an IDX image header (16)", origin, fileBytes));
  if (const std::uint32_t m = readBigEndian32(header.data()); m != kImagesMagic)
    throw UsageError(fmt::format("{} is not an IDX image file: magic number {}, expected {}", origin, m, kImagesMagic));
  const IdxImages h{readBigEndian32(header.data() + 4), readBigEndian32(header.data() + 8), readBigEndian32(header.data() + 12)};
  if (h.count == 0 || h.rows == 0 || h.cols == 0 || h.rows > 4096 || h.cols > 4096)
    throw UsageError(
        fmt::format("{} says it holds {} images of {}x{}, which is not a usable dataset", origin, h.count, h.rows, h.cols));
  const std::uint64_t imageBytes = 16 + h.count * h.rows * h.cols;  // < 2^57: no overflow
  if (fileBytes != imageBytes)
    throw UsageError(fmt::format("{} is {} bytes, but {} images of {}x{} need {}{}", origin, fileBytes, h.count, h.rows, h.cols,
                                 imageBytes, fileBytes < imageBytes ? " (truncated)" : ""));
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

// The images are read a sample at a time; the labels, one byte a sample, whole.
Mnist::Mnist(const std::string& dir, Split split, const std::vector<std::string>& paths)
    : images_(openDataFile(paths[0], kMaxDataFileBytes)) {
  const InputFile labelFile = openDataFile(paths[1], kMaxWholeDataFileBytes);
  std::vector<std::uint8_t> labelBytes = labelFile.readBytes();
  std::uint8_t header[kImagesHeader] = {};
  const std::size_t headerBytes = static_cast<std::size_t>(std::min<std::uint64_t>(images_.size(), kImagesHeader));
  images_.readAt(0, header, headerBytes);
  const IdxImages images = checkIdxImages({header, headerBytes}, images_.size(), images_.path());
  const std::uint64_t labels = checkIdxLabels(labelBytes, labelFile.path());
  if (labels != images.count)
    throw UsageError(
        fmt::format("{} has {} labels but {} has {} images", labelFile.path(), labels, images_.path(), images.count));
  labels_ = std::move(labelBytes);

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
  thread_local std::vector<std::uint8_t> px;  // one per loader thread: no allocation per sample
  px.resize(static_cast<std::size_t>(d));
  images_.readAt(kImagesHeader + static_cast<std::uint64_t>(index * d), px.data(), px.size());
  for (std::int64_t j = 0; j < d; ++j) features[j] = (static_cast<float>(px[j]) / 255.0f - kMean) / kStd;
  targets[0] = labels_[kLabelsHeader + static_cast<std::size_t>(index)];
}

nlohmann::json Mnist::identity() const {
  // Not the directory: the same files moved elsewhere are the same data.
  nlohmann::json j = {{"kind", "mnist"}, {"size", info_.size}, {"sample_shape", info_.sampleShape}};
  if (info_.split != Split::kTrain) j["split"] = nameOf(info_.split);
  return j;
}

}  // namespace ts::data
