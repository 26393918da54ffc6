#include "workloads/data/dataset_files.h"

#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::data {
namespace fs = std::filesystem;

void requireDirectory(const std::string& dir) {
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (!fs::exists(st)) throw UsageError(fmt::format("directory {} does not exist", dir));
  if (!fs::is_directory(st)) throw UsageError(fmt::format("{} is not a directory", dir));
}

std::string findDatasetFile(const std::string& dir, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    const fs::path p = fs::path(dir) / name;
    if (fs::exists(p)) return p.string();
  }
  for (const auto& name : names) {
    if (fs::exists(fs::path(dir) / (name + ".gz")))
      throw UsageError(fmt::format("{} has {}.gz but not {}: decompress it first (gunzip -k)", dir, name, name));
  }
  throw UsageError(fmt::format("{} has no {}", dir, names.front()));
}

InputFile openDataFile(const std::string& path, std::uint64_t maxBytes) { return InputFile("", path, maxBytes); }

std::uint32_t readBigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

}  // namespace ts::data
