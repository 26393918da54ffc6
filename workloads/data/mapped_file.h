#pragma once
// A file's bytes, mapped read-only. Datasets and checkpoints are read through it: no copy of the
// whole file, and ranks on one host share the page cache.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ts::data {

class MappedFile {
 public:
  // UsageError "cannot read PATH: reason" when the file cannot be opened or mapped. An empty file maps
  // to size() == 0 and data() == nullptr.
  explicit MappedFile(std::string path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ts::data
