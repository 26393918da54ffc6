#include "base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

std::string_view fileKind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

namespace {

// The one line of a refusal, in the two styles the header shows. `reason` reads after "<what> <path>: "; `it`
// after "cannot read <path>: ".
UsageError refusal(std::string_view what, const std::string& path, std::string_view reason, std::string_view it) {
  if (what.empty()) return UsageError(fmt::format("cannot read {}: {}", path, it));
  return UsageError(fmt::format("{} {}: {}", what, path, reason));
}

UsageError cannotRead(std::string_view what, const std::string& path, int err) {
  const char* why = std::strerror(err);
  return refusal(what, path, fmt::format("cannot read it: {}", why), why);
}

// A regular file within the bound, or the refusal that says what it is.
void checkKindAndSize(std::string_view what, const std::string& path, const struct stat& st, std::uint64_t maxBytes) {
  if (!S_ISREG(st.st_mode)) {
    const std::string kind = fmt::format("{}, not a regular file", fileKind(st.st_mode));
    throw refusal(what, path, "is " + kind, "it is " + kind);
  }
  const auto bytes = static_cast<std::uint64_t>(st.st_size);
  if (bytes > maxBytes) {
    const std::string size = fmt::format("{} bytes, more than the {} this input may be", bytes, maxBytes);
    throw refusal(what, path, size, "it is " + size);
  }
}

}  // namespace

InputFile::InputFile(std::string_view what, std::string path, std::uint64_t maxBytes) : what_(what), path_(std::move(path)) {
  if (path_.empty()) throw refusal(what, path_, "an empty path", "an empty path");
  // Looked at before it is opened: opening a device may do something (a tape rewinds), a FIFO would wait.
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) throw cannotRead(what, path_, errno);
  checkKindAndSize(what, path_, st, maxBytes);
  // O_NONBLOCK: should a FIFO be put at the name after the look, the open returns at once and fstat refuses it.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw cannotRead(what, path_, errno);
  try {
    if (::fstat(fd_, &st) != 0) throw cannotRead(what, path_, errno);
    checkKindAndSize(what, path_, st, maxBytes);  // what was opened, whatever the name held before
  } catch (...) {
    close();
    throw;
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() { close(); }

InputFile::InputFile(InputFile&& other) noexcept
    : what_(std::move(other.what_)),
      path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(std::exchange(other.size_, 0)) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    close();
    what_ = std::move(other.what_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void InputFile::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void InputFile::readAt(std::uint64_t offset, void* into, std::size_t bytes) const {
  auto* p = static_cast<char*>(into);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t k = ::pread(fd_, p + done, bytes - done, static_cast<off_t>(offset + done));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      const int err = errno;
      throw Error(fmt::format("{}reading {} failed: {}", what_.empty() ? "" : what_ + " ", path_, std::strerror(err)));
    }
    if (k == 0) {  // the end came early: the file is shorter than it was
      struct stat st {};
      const auto now = ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : offset + done;
      const std::string changed = fmt::format("changed while in use: it is {} bytes now, {} when it was opened", now, size_);
      if (what_.empty()) throw UsageError(fmt::format("{} {}", path_, changed));
      throw UsageError(fmt::format("{} {}: {}", what_, path_, changed));
    }
    done += static_cast<std::size_t>(k);
  }
}

std::string InputFile::readAll() const {
  std::string bytes(static_cast<std::size_t>(size_), '\0');
  readAt(0, bytes.data(), bytes.size());
  return bytes;
}

std::vector<std::uint8_t> InputFile::readBytes() const {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size_));
  readAt(0, bytes.data(), bytes.size());
  return bytes;
}

std::string readInputFile(std::string_view what, const std::string& path, std::uint64_t maxBytes) {
  return InputFile(what, path, maxBytes).readAll();
}

}  // namespace ts
