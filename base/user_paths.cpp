#include "base/user_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"
#include "base/input_file.h"

namespace ts {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(std::string_view what, const std::string& path, std::string_view why) {
  throw UsageError(fmt::format("{} {}: {}", what, path, why));
}

// The nearest ancestor of `p` that exists (p itself excluded), or "." for a relative name.
fs::path nearestExistingAncestor(const fs::path& p) {
  fs::path a = p.parent_path();
  while (!a.empty()) {
    struct stat st {};
    if (::lstat(a.c_str(), &st) == 0) return a;
    if (a == a.parent_path()) break;
    a = a.parent_path();
  }
  return ".";
}

// A new entry under `p` can be made: its nearest existing ancestor is a directory this process may write.
void checkCreatable(std::string_view what, const std::string& path) {
  const fs::path ancestor = nearestExistingAncestor(fs::path(path));
  struct stat st {};
  if (::stat(ancestor.c_str(), &st) != 0)
    refuse(what, path, fmt::format("cannot reach {}: {}", ancestor.string(), std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) refuse(what, path, fmt::format("{} is {}, not a directory", ancestor.string(), fileKind(st.st_mode)));
  if (::access(ancestor.c_str(), W_OK | X_OK) != 0)
    refuse(what, path, fmt::format("cannot create it in {}: {}", ancestor.string(), std::strerror(errno)));
}

}  // namespace

void checkOutputFile(std::string_view what, const std::string& path) {
  if (path.empty()) refuse(what, path, "an empty path");
  if (path.back() == '/') refuse(what, path, "names a directory (a file name is expected)");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) refuse(what, path, fmt::format("is {}; only a regular file is replaced", fileKind(st.st_mode)));
    if (::access(path.c_str(), W_OK) != 0) refuse(what, path, fmt::format("cannot write it: {}", std::strerror(errno)));
    // The file is replaced by renaming a new one over it: its directory must be writable too.
    checkCreatable(what, path);
    return;
  }
  if (errno != ENOENT && errno != ENOTDIR) refuse(what, path, std::strerror(errno));  // ENOTDIR: said below
  checkCreatable(what, path);
}

void checkOutputDirectory(std::string_view what, const std::string& path) {
  if (path.empty()) refuse(what, path, "an empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) refuse(what, path, fmt::format("is {}, not a directory", fileKind(st.st_mode)));
    if (::access(path.c_str(), W_OK | X_OK) != 0)
      refuse(what, path, fmt::format("cannot write into it: {}", std::strerror(errno)));
    return;
  }
  if (errno != ENOENT && errno != ENOTDIR) refuse(what, path, std::strerror(errno));  // ENOTDIR: said below
  checkCreatable(what, path);
}

void checkInputFile(std::string_view what, const std::string& path, std::uintmax_t maxBytes) {
  const InputFile opened(what, path, maxBytes);  // the same rules as every reader of such a file
}

std::string safeFileComponent(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 100)) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out += keep ? c : '_';
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');  // never ".", "..", or a hidden file
  return out;
}

}  // namespace ts
