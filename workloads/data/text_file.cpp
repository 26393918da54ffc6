#include "workloads/data/text_file.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/data/dataset_files.h"

namespace ts::data {

namespace {
InputFile openText(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UsageError(fmt::format("file {} does not exist", path));
  return openDataFile(path);
}
}  // namespace

TextFile::TextFile(const std::string& path, std::int64_t seqLen, Split split) : file_(openText(path)) {
  if (seqLen < 1) throw UsageError(fmt::format("sequence length {} is below 1", seqLen));
  const auto bytes = static_cast<std::int64_t>(file_.size());
  if (bytes < seqLen + 1)
    throw UsageError(fmt::format("{} has {} bytes; a sequence of {} tokens needs at least {}", path, bytes, seqLen, seqLen + 1));
  const std::int64_t heldOut = std::max(seqLen + 1, bytes / 10), cut = bytes - heldOut;
  const bool splits = cut >= seqLen + 1;
  if (split == Split::kHeldOut && !splits)
    throw UsageError(fmt::format("{} has {} bytes: too few to hold out {} for evaluation and train on the rest (at least {})",
                                 path, bytes, heldOut, 2 * (seqLen + 1)));
  info_.name = "text";
  info_.origin = path;
  info_.split = split;
  info_.task = Task::kLanguageModel;
  info_.sampleShape = {seqLen};
  info_.vocab = 256;
  if (split == Split::kHeldOut) {
    first_ = cut;
    info_.size = heldOut - seqLen;
  } else {
    info_.size = (splits ? cut : bytes) - seqLen;
  }
}

void TextFile::sample(std::int64_t index, float*, std::int32_t* tokens, std::int32_t* targets) const {
  const std::int64_t t = info_.sampleShape[0];
  thread_local std::vector<std::uint8_t> window;  // one per loader thread: no allocation per sample
  window.resize(static_cast<std::size_t>(t + 1));
  file_.readAt(static_cast<std::uint64_t>(first_ + index), window.data(), window.size());
  const std::uint8_t* p = window.data();
  for (std::int64_t i = 0; i < t; ++i) {
    tokens[i] = p[i];
    targets[i] = p[i + 1];
  }
}

nlohmann::json TextFile::identity() const {
  nlohmann::json j = {{"kind", "text"}, {"bytes", file_.size()}, {"seq_len", info_.sampleShape[0]}};
  j[info_.split == Split::kTrain ? "windows" : "held_out_windows"] = info_.size;  // where the split falls
  return j;
}

}  // namespace ts::data
