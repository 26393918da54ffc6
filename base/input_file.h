#pragma once
// Files trainscope reads but did not write this run (training data, checkpoints, suites, shapes and pairs files,
// the results of child runs), which may sit in a folder others can write (docs/reliability.md "Files in shared
// folders"). Only a regular file is ever opened: a FIFO would hold the run until someone writes to it, a device
// (/dev/zero) would be read without end, and opening some devices does things. Its size is bounded before a byte
// is read, and it is read with pread, not mapped: a mapped file truncated under the run kills the process with
// SIGBUS, while a short read is one line saying the file changed. Links are followed: the path is the user's own,
// and reading through a link changes nothing.
//
// Each refusal is a UsageError of one line. With a `what` (the flag or input it is, "--shapes"):
//   "<what> <path>: cannot read it: <reason>" / "<what> <path>: is a FIFO, not a regular file" / "<what> <path>:
//   N bytes, more than the M this input may be"; without one (the caller says what the file is for):
//   "cannot read <path>: <reason>" / "cannot read <path>: it is a FIFO, not a regular file" / "cannot read <path>:
//   it is N bytes, more than the M this input may be".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

class InputFile {
 public:
  InputFile(std::string_view what, std::string path, std::uint64_t maxBytes);
  ~InputFile();
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }  // when it was opened

  // Exactly `bytes` bytes from `offset` (thread-safe). A file that is shorter now: UsageError "<path> changed
  // while in use: it is N bytes now, M when it was opened" (with the what prefix when there is one).
  void readAt(std::uint64_t offset, void* into, std::size_t bytes) const;
  // The whole file, size() bytes (one allocation: the size was bounded at the open), as text or as bytes.
  std::string readAll() const;
  std::vector<std::uint8_t> readBytes() const;

 private:
  void close() noexcept;
  std::string what_;
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole of a small input (a TOML file, a checkpoint's index): InputFile(what, path, maxBytes).readAll().
std::string readInputFile(std::string_view what, const std::string& path, std::uint64_t maxBytes);

// "a regular file", "a FIFO", "a character device", ... for a st_mode.
std::string_view fileKind(unsigned mode);

}  // namespace ts
