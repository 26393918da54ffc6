#include "workloads/data/cifar10.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/data/dataset_files.h"

namespace ts::data {

namespace {
constexpr float kChannelMean[3] = {0.4914f, 0.4822f, 0.4465f};
constexpr float kChannelStd[3] = {0.2470f, 0.2435f, 0.2616f};
constexpr std::int64_t kPlane = 32 * 32;

// DIR itself, or the folder the official archive unpacks to inside it.
std::string batchDirectory(const std::string& dir) {
  requireDirectory(dir);
  const auto nested = std::filesystem::path(dir) / "cifar-10-batches-bin";
  if (!std::filesystem::exists(std::filesystem::path(dir) / "data_batch_1.bin") &&
      std::filesystem::exists(nested / "data_batch_1.bin"))
    return nested.string();
  return dir;
}
}  // namespace

std::int64_t checkCifar10Batch(std::span<const std::uint8_t> bytes, const std::string& origin) {
  constexpr auto kRecordBytes = Cifar10::kRecordBytes;
  if (bytes.empty() || bytes.size() % kRecordBytes != 0)
    throw UsageError(fmt::format("{} is {} bytes, not a whole number of {}-byte records (label + 3x32x32 pixels){}", origin,
                                 bytes.size(), kRecordBytes, bytes.empty() ? "" : " (truncated?)"));
  const auto records = static_cast<std::int64_t>(bytes.size()) / kRecordBytes;
  for (std::int64_t r = 0; r < records; ++r)
    if (const std::uint8_t label = bytes[static_cast<std::size_t>(r * kRecordBytes)]; label > 9)
      throw UsageError(
          fmt::format("{}: label {} of record {} is not a class 0-9 (is this the CIFAR-100 file?)", origin, label, r));
  return records;
}

std::vector<std::string> Cifar10::files(const std::string& dir, Split split) {
  const std::string where = batchDirectory(dir);
  std::vector<std::string> names;
  for (int f = 1; f <= kFiles; ++f) names.push_back(fmt::format("data_batch_{}.bin", f));
  if (split == Split::kHeldOut) names = {"test_batch.bin"};
  std::vector<std::string> paths;
  for (const std::string& name : names) paths.push_back(findDatasetFile(where, {name}));
  return paths;
}

Cifar10::Cifar10(const std::string& dir, Split split) {
  std::int64_t total = 0;
  for (const std::string& path : files(dir, split)) {
    InputFile file = openDataFile(path, kMaxWholeDataFileBytes);
    const std::int64_t records = checkCifar10Batch(file.readBytes(), file.path());
    firstIndex_.push_back(total);
    total += records;
    files_.push_back(std::move(file));
  }
  info_.name = "cifar10";
  info_.origin = dir;
  info_.split = split;
  info_.task = Task::kClassification;
  info_.sampleShape = {3, 32, 32};
  info_.classes = 10;
  info_.size = total;
}

void Cifar10::sample(std::int64_t index, float* features, std::int32_t*, std::int32_t* targets) const {
  const auto f =
      static_cast<std::size_t>(std::upper_bound(firstIndex_.begin(), firstIndex_.end(), index) - firstIndex_.begin() - 1);
  std::uint8_t rec[kRecordBytes];
  files_[f].readAt(static_cast<std::uint64_t>((index - firstIndex_[f]) * kRecordBytes), rec, sizeof rec);
  targets[0] = rec[0];
  for (int c = 0; c < 3; ++c)
    for (std::int64_t j = 0; j < kPlane; ++j)
      features[c * kPlane + j] = (static_cast<float>(rec[1 + c * kPlane + j]) / 255.0f - kChannelMean[c]) / kChannelStd[c];
}

nlohmann::json Cifar10::identity() const {
  nlohmann::json j = {{"kind", "cifar10"}, {"size", info_.size}};
  if (info_.split != Split::kTrain) j["split"] = nameOf(info_.split);
  return j;
}

}  // namespace ts::data
