#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"
#include "base/input_file.h"

namespace ts {
namespace fs = std::filesystem;

namespace {

// A temporary name nobody can guess ahead; should getrandom fail, a clock, the pid and a counter (a guess then
// still meets O_EXCL).
std::uint64_t randomWord() {
  std::uint64_t v = 0;
  if (::getrandom(&v, sizeof v, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof v)) return v;
  static std::atomic<std::uint64_t> counter{0};
  const auto ns = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ns ^ (static_cast<std::uint64_t>(::getpid()) << 40) ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
}

// The folder part of `path` ("." when there is none) and the file's name in it.
struct Place {
  std::string dir, name;
};

Place placeOf(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.parent_path();
  Place place{dir.empty() ? std::string(".") : dir.string(), p.filename().string()};
  if (place.name.empty() || place.name == "." || place.name == "..")
    throw UsageError(fmt::format("{} names a directory (a file name is expected)", path));
  return place;
}

// fs.protected_symlinks, whatever the sysctl says: a folder that is a link is followed unless another user made
// it in a sticky world-writable folder (/tmp, a shared results folder) that this user does not own either.
void checkFolderLink(const std::string& dir) {
  struct stat link {};
  if (::lstat(dir.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return;
  const fs::path above = fs::path(dir).parent_path();
  const std::string holder = above.empty() ? std::string(".") : above.string();
  struct stat parent {};
  if (::stat(holder.c_str(), &parent) != 0) return;  // the open below says what is wrong
  const bool shared = (parent.st_mode & S_ISVTX) && (parent.st_mode & S_IWOTH);
  if (shared && link.st_uid != ::geteuid() && link.st_uid != parent.st_uid)
    throw UsageError(
        fmt::format("{} is a link that user {} made in the shared folder {}: it is not followed", dir, link.st_uid, holder));
}

// The folder `place.dir`, opened once: every name in it is then made through this descriptor.
int openFolder(const Place& place, const std::string& path) {
  checkFolderLink(place.dir);
  const int fd = ::open(place.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot write {}: cannot open its folder {}: {}", path, place.dir, std::strerror(errno)));
  return fd;
}

void closeFd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Writes all of it, or throws Error naming `path`.
void writeAll(int fd, const void* data, std::size_t bytes, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t k = ::write(fd, p + done, bytes - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw Error(fmt::format("writing {} failed: {}", path, std::strerror(k < 0 ? errno : ENOSPC)));
    done += static_cast<std::size_t>(k);
  }
}

// The target of a write that must not be replaced: anything but a regular file (or nothing).
void refuseNonRegular(int dirFd, const std::string& name, const std::string& path) {
  struct stat st {};
  if (::fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
    throw Error(fmt::format("{} exists and is {}: it is not replaced", path, fileKind(st.st_mode)));
}

// Renames `from` to `to` in one folder unless `to` exists: false when it does.
bool renameNoReplace(int dirFd, const std::string& from, const std::string& to) {
  if (::renameat2(dirFd, from.c_str(), dirFd, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno == EEXIST) return false;
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return false;
  // A filesystem without renameat2's flags: a hard link does not replace either.
  if (::linkat(dirFd, from.c_str(), dirFd, to.c_str(), 0) == 0) return ::unlinkat(dirFd, from.c_str(), 0) == 0;
  return false;
}

}  // namespace

void createParentDirectories(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(fmt::format("cannot create directory {} for {}: {}", parent.string(), path, ec.message()));
}

void syncDirectory(const std::string& dir) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  ::fsync(dfd);
  ::close(dfd);
}

namespace {
// keepAside's work in its folder, already open (dirFd): "" when nothing is at the name.
std::string keepAsideIn(int dirFd, const Place& place, const std::string& path) {
  struct stat st {};
  if (::fstatat(dirFd, place.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return "";
  refuseNonRegular(dirFd, place.name, path);
  constexpr int kMostKept = 1000;
  for (int n = 1; n <= kMostKept; ++n) {
    const std::string aside = fmt::format("{}.{}", place.name, n);
    if (renameNoReplace(dirFd, place.name, aside)) {
      ::fsync(dirFd);
      const std::string kept = fmt::format("{}.{}", path, n);
      std::fprintf(stderr, "trainscope: note: kept the earlier %s as %s\n", path.c_str(), kept.c_str());
      return kept;
    }
    if (errno != EEXIST) throw Error(fmt::format("cannot keep the earlier {} aside: {}", path, std::strerror(errno)));
  }
  throw Error(fmt::format("cannot keep the earlier {} aside: {}.1 to {}.{} are all taken", path, path, path, kMostKept));
}
}  // namespace

std::string keepAside(const std::string& path) {
  const Place place = placeOf(path);
  if (::access(place.dir.c_str(), F_OK) != 0) return "";  // no folder, so no earlier file
  int dirFd = openFolder(place, path);
  try {
    std::string kept = keepAsideIn(dirFd, place, path);
    closeFd(dirFd);
    return kept;
  } catch (...) {
    closeFd(dirFd);
    throw;
  }
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const Place place = placeOf(path_);
  name_ = place.name;
  createParentDirectories(path_);
  dirFd_ = openFolder(place, path_);
  // The rename would replace whatever is there: never a device, a FIFO, a link or a directory.
  try {
    refuseNonRegular(dirFd_, name_, path_);
  } catch (...) {
    closeFd(dirFd_);
    throw;
  }
  int err = 0;
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    tmpName_ = fmt::format(".{}.{:016x}.tmp", name_.substr(0, 100), randomWord());
    fd_ = ::openat(dirFd_, tmpName_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    err = errno;
    if (fd_ < 0 && err != EEXIST) break;  // EEXIST: something is at that name already; another name
  }
  if (fd_ < 0) {
    closeFd(dirFd_);
    throw Error(fmt::format("cannot write {}: {}", path_, std::strerror(err)));
  }
}

AtomicFile::~AtomicFile() {
  discard();
  closeFd(dirFd_);
}

void AtomicFile::discard() noexcept {
  if (fd_ < 0) return;
  closeFd(fd_);
  ::unlinkat(dirFd_, tmpName_.c_str(), 0);
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (fd_ < 0) throw Error(fmt::format("writing {} after it was committed or failed", path_));
  try {
    writeAll(fd_, data, bytes, path_);
  } catch (...) {
    discard();
    throw;
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(fmt::format("committing {} twice, or after a failed write", path_));
  try {
    if (::fsync(fd_) != 0) throw Error(fmt::format("flushing {} failed: {}", path_, std::strerror(errno)));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int err = errno;
      ::unlinkat(dirFd_, tmpName_.c_str(), 0);
      throw Error(fmt::format("flushing {} failed: {}", path_, std::strerror(err)));
    }
  } catch (...) {
    discard();
    throw;
  }
  try {
    // Looked at again: a link or a FIFO put at the name since the constructor is not replaced either.
    refuseNonRegular(dirFd_, name_, path_);
    if (::renameat(dirFd_, tmpName_.c_str(), dirFd_, name_.c_str()) != 0)
      throw Error(fmt::format("renaming a new {} into place failed: {}", path_, std::strerror(errno)));
  } catch (...) {
    ::unlinkat(dirFd_, tmpName_.c_str(), 0);
    throw;
  }
  ::fsync(dirFd_);  // best effort, as syncDirectory
  closeFd(dirFd_);
}

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

StreamFile::StreamFile(std::string path) : path_(std::move(path)) {
  const Place place = placeOf(path_);
  name_ = place.name;
  createParentDirectories(path_);
  // One open of the folder for both steps: opened twice, its name could lead elsewhere the second time (a link
  // swapped), the earlier file kept aside in one folder and the stream made in another.
  dirFd_ = openFolder(place, path_);
  try {
    keepAsideIn(dirFd_, place, path_);
  } catch (...) {
    closeFd(dirFd_);
    throw;
  }
  fd_ = ::openat(dirFd_, name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0644);
  if (fd_ < 0) {
    const int err = errno;
    closeFd(dirFd_);
    if (err == EEXIST)  // put there since keepAside() moved the earlier one away: not ours to write
      throw Error(fmt::format("cannot write {}: something else was put at that name as the run started", path_));
    throw Error(fmt::format("cannot write {}: {}", path_, std::strerror(err)));
  }
}

StreamFile::~StreamFile() {
  closeFd(fd_);
  closeFd(dirFd_);
}

void StreamFile::write(std::string_view text) {
  if (fd_ < 0) throw Error(fmt::format("writing {} after it was removed", path_));
  writeAll(fd_, text.data(), text.size(), path_);
}

void StreamFile::sync() {
  if (fd_ < 0) return;
  ::fsync(fd_);
  ::fsync(dirFd_);  // its name too, made when the stream started
}

void StreamFile::remove() noexcept {
  if (fd_ < 0) return;
  // Only the file this object made: the name is removed if it still is that file.
  struct stat mine {
  }, there{};
  if (::fstat(fd_, &mine) == 0 && ::fstatat(dirFd_, name_.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
      mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
    ::unlinkat(dirFd_, name_.c_str(), 0);
  closeFd(fd_);
}

}  // namespace ts
