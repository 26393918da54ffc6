#include "base/user_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(std::string_view what, const std::string& path, std::string_view why) {
  throw UsageError(fmt::format("{} {}: {}", what, path, why));
}

std::string_view kindOf(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
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
  if (!S_ISDIR(st.st_mode)) refuse(what, path, fmt::format("{} is {}, not a directory", ancestor.string(), kindOf(st.st_mode)));
  if (::access(ancestor.c_str(), W_OK | X_OK) != 0)
    refuse(what, path, fmt::format("cannot create it in {}: {}", ancestor.string(), std::strerror(errno)));
}

}  // namespace

void checkOutputFile(std::string_view what, const std::string& path) {
  if (path.empty()) refuse(what, path, "an empty path");
  if (path.back() == '/') refuse(what, path, "names a directory (a file name is expected)");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) refuse(what, path, fmt::format("is {}; only a regular file is replaced", kindOf(st.st_mode)));
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
    if (!S_ISDIR(st.st_mode)) refuse(what, path, fmt::format("is {}, not a directory", kindOf(st.st_mode)));
    if (::access(path.c_str(), W_OK | X_OK) != 0)
      refuse(what, path, fmt::format("cannot write into it: {}", std::strerror(errno)));
    return;
  }
  if (errno != ENOENT && errno != ENOTDIR) refuse(what, path, std::strerror(errno));  // ENOTDIR: said below
  checkCreatable(what, path);
}

void checkInputFile(std::string_view what, const std::string& path, std::uintmax_t maxBytes) {
  if (path.empty()) refuse(what, path, "an empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) refuse(what, path, fmt::format("cannot read it: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) refuse(what, path, fmt::format("is {}, not a regular file", kindOf(st.st_mode)));
  if (::access(path.c_str(), R_OK) != 0) refuse(what, path, fmt::format("cannot read it: {}", std::strerror(errno)));
  if (static_cast<std::uintmax_t>(st.st_size) > maxBytes)
    refuse(what, path, fmt::format("{} bytes, more than the {} this input may be", st.st_size, maxBytes));
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
