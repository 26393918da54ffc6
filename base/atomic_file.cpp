#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {
namespace fs = std::filesystem;

namespace {
// Two writers of the same target in one process (threads) must not share a temporary file.
std::atomic<unsigned> g_tmpCounter{0};
}  // namespace

void createParentDirectories(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(fmt::format("cannot create directory {} for {}: {}", parent.string(), path, ec.message()));
}

void syncDirectory(const std::string& dir) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd < 0) return;
  ::fsync(dfd);
  ::close(dfd);
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // The rename would replace whatever is there: never a device, a FIFO, a link or a directory.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(fmt::format("{} exists and is not a regular file: it is not replaced", path_));
  createParentDirectories(path_);
  tmp_ = fmt::format("{}.tmp.{}.{}", path_, ::getpid(), g_tmpCounter.fetch_add(1));
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(fmt::format("cannot write {}: {}", tmp_, std::strerror(errno)));
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
  fd_ = -1;
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (fd_ < 0) throw Error(fmt::format("writing {} after it was committed or failed", path_));
  const char* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t k = ::write(fd_, p + done, bytes - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      const int err = k < 0 ? errno : ENOSPC;
      discard();
      throw Error(fmt::format("writing {} failed: {}", tmp_, std::strerror(err)));
    }
    done += static_cast<std::size_t>(k);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(fmt::format("committing {} twice, or after a failed write", path_));
  if (::fsync(fd_) != 0) {
    const int err = errno;
    discard();
    throw Error(fmt::format("flushing {} failed: {}", tmp_, std::strerror(err)));
  }
  const int closed = ::close(fd_);
  const int closeErr = errno;
  fd_ = -1;
  if (closed != 0) {
    ::unlink(tmp_.c_str());
    throw Error(fmt::format("flushing {} failed: {}", tmp_, std::strerror(closeErr)));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw Error(fmt::format("renaming {} to {} failed: {}", tmp_, path_, std::strerror(err)));
  }
  syncDirectory(fs::path(path_).parent_path().string());
}

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace ts
