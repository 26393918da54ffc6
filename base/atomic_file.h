#pragma once
// Files that are either absent, the old version, or complete — never half-written (docs/architecture.md "A run, end to end";
// checkpoints). The bytes go to a temporary file in the same directory (same filesystem, so the rename
// is atomic), which is fsync'ed and renamed over the target; the directory is then fsync'ed so that the
// rename itself survives a power loss.
#include <cstddef>
#include <string>
#include <string_view>

namespace ts {

// Creates the directories above `path` (Error naming both when that fails).
void createParentDirectories(const std::string& path);

// fsync of a directory, so that entries created or renamed in it are durable. Best effort: some
// filesystems refuse to open or sync directories, and the data itself was already synced.
void syncDirectory(const std::string& dir);

// A file being written atomically. Nothing appears at `path` until commit(); a writer destroyed
// without commit() (an exception on the way) removes its temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // creates the parent directories
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // fsync, rename over the target, fsync of the directory. Throws Error on any failure (disk full).
  void commit();

  const std::string& path() const { return path_; }

 private:
  void discard() noexcept;
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
};

// Writes `bytes` to `path` atomically (temp file in the same directory, fsync, rename, fsync of the directory).
void writeFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace ts
