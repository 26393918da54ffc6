#include "workloads/data/text_file.h"

#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::data {

namespace {
MappedFile openText(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UsageError(fmt::format("file {} does not exist", path));
  return MappedFile(path);
}
}  // namespace

TextFile::TextFile(const std::string& path, std::int64_t seqLen) : file_(openText(path)) {
  if (seqLen < 1) throw UsageError(fmt::format("sequence length {} is below 1", seqLen));
  const auto bytes = static_cast<std::int64_t>(file_.size());
  if (bytes < seqLen + 1)
    throw UsageError(fmt::format("{} has {} bytes; a sequence of {} tokens needs at least {}", path, bytes, seqLen, seqLen + 1));
  info_.name = "text";
  info_.origin = path;
  info_.task = Task::kLanguageModel;
  info_.sampleShape = {seqLen};
  info_.vocab = 256;
  info_.size = bytes - seqLen;
}

void TextFile::sample(std::int64_t index, float*, std::int32_t* tokens, std::int32_t* targets) const {
  const std::uint8_t* p = file_.data() + index;
  const std::int64_t t = info_.sampleShape[0];
  for (std::int64_t i = 0; i < t; ++i) {
    tokens[i] = p[i];
    targets[i] = p[i + 1];
  }
}

nlohmann::json TextFile::identity() const {
  return {{"kind", "text"}, {"bytes", file_.size()}, {"seq_len", info_.sampleShape[0]}};
}

}  // namespace ts::data
