#include "bench/data_home.h"

#include <cstdlib>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "trainscope/build_info.h"

namespace ts {
namespace {
namespace fs = std::filesystem;

std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  if (const char* home = std::getenv("TRAINSCOPE_HOME"); home && *home) out.emplace_back(home);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back(exe.parent_path().parent_path() / "share" / "trainscope");
  out.emplace_back(build::kSourceDir);
  return out;
}

// The suites as installed (share/trainscope/suites) or in the source tree (bench/suites).
std::optional<fs::path> suitesDir() {
  const auto home = dataHome();
  if (!home) return std::nullopt;
  for (const fs::path& dir : {*home / "suites", *home / "bench" / "suites"})
    if (fs::is_directory(dir)) return dir;
  return std::nullopt;
}

}  // namespace

std::optional<fs::path> dataHome() {
  for (const fs::path& c : candidates())
    if (fs::exists(c / "reports" / "__main__.py")) return c;
  return std::nullopt;
}

std::string dataHomeCandidates() {
  std::vector<std::string> paths;
  for (const fs::path& c : candidates()) paths.push_back(c.string());
  return fmt::format("{}", fmt::join(paths, ", "));
}

std::string resolveSuite(const std::string& nameOrPath) {
  std::error_code ec;
  if (fs::exists(nameOrPath, ec) || nameOrPath.find('/') != std::string::npos) return nameOrPath;  // a path: loadSuite checks it
  const auto dir = suitesDir();
  if (!dir) return nameOrPath;
  const std::string file = nameOrPath.ends_with(".toml") ? nameOrPath : nameOrPath + ".toml";
  if (fs::is_regular_file(*dir / file)) return (*dir / file).string();
  std::vector<std::string> shipped;
  for (const auto& e : fs::directory_iterator(*dir, ec))
    if (e.path().extension() == ".toml") shipped.push_back(e.path().stem().string());
  throw UsageError(fmt::format("suite {}: no such file, and no suite of that name in {} (there: {})", nameOrPath, dir->string(),
                               shipped.empty() ? "none" : fmt::format("{}", fmt::join(shipped, ", "))));
}

}  // namespace ts
