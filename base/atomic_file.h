#pragma once
// Every file trainscope writes goes through here (docs/reliability.md "Files in shared folders"): the documents
// written whole (results, checkpoints, traces, --dump-logits) through AtomicFile, the files written as they go
// (a result stream, an MLPerf log, a child run's output) through StreamFile.
//
// The folder may be one that others can write into (a shared results folder), so nothing is ever written through
// a name someone else could have put there first: the folder is opened once and every entry is made through its
// descriptor (openat, renameat), each new file with O_CREAT|O_EXCL|O_NOFOLLOW, so a link or any file planted at
// the name makes the open fail instead of writing through it. The folder itself is followed when it is a link the
// user could have made (one owned by this user or by the folder that holds it); a link another user planted in a
// sticky world-writable folder is refused, which is the kernel's fs.protected_symlinks rule, applied whether or not
// the machine turns it on.
//
// AtomicFile: files that are either absent, the old version, or complete — never half-written. The bytes go to a
// temporary file of a random name in the same folder (same filesystem, so the rename is atomic), which is
// fsync'ed and renamed over the target; the folder is then fsync'ed so that the rename itself survives a power
// loss. A target that is not a regular file (a link, a FIFO, a device, a folder) is never replaced.
//
// StreamFile: an earlier file at its name is never replaced or truncated (it may be the only copy of what a
// killed run measured): it is renamed aside to NAME.1 (the lowest number free) and a note on stderr says so.
#include <cstddef>
#include <string>
#include <string_view>

namespace ts {

// Creates the directories above `path` (Error naming both when that fails).
void createParentDirectories(const std::string& path);

// fsync of a directory, so that entries created or renamed in it are durable. Best effort: some
// filesystems refuse to open or sync directories, and the data itself was already synced.
void syncDirectory(const std::string& dir);

// Renames a regular file at `path` to "<path>.N", N the lowest number with no file (never replacing one), prints
// "trainscope: note: kept the earlier <path> as <path>.N" and returns the new name; "" when nothing is at `path`.
// Error when what is there is not a regular file, or cannot be renamed.
std::string keepAside(const std::string& path);

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
  std::string name_;     // the target's name in its folder
  std::string tmpName_;  // the temporary file's name in that folder
  int dirFd_ = -1;
  int fd_ = -1;
};

// Writes `bytes` to `path` atomically (temp file in the same directory, fsync, rename, fsync of the directory).
void writeFileAtomically(const std::string& path, std::string_view bytes);

// A file written as it goes, created new (keepAside() first moves an earlier one out of the way). Each write() is
// whole or an Error; nothing is buffered, so a kill keeps every write that returned.
class StreamFile {
 public:
  explicit StreamFile(std::string path);  // creates the parent directories
  ~StreamFile();
  StreamFile(const StreamFile&) = delete;
  StreamFile& operator=(const StreamFile&) = delete;

  void write(std::string_view text);
  void sync();  // fsync: durable before the run says it ended
  // Removes the file (what this object created, nothing else): a stream that ended up holding no result.
  void remove() noexcept;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }  // a child's stdout and stderr

 private:
  std::string path_;
  std::string name_;
  int dirFd_ = -1;
  int fd_ = -1;
};

}  // namespace ts
