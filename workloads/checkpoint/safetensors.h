#pragma once
// The safetensors format (Hugging Face), so that PyTorch (safetensors.torch.load_file) reads trainscope's
// weights directly:
//   8 bytes   N, little-endian u64
//   N bytes   a UTF-8 JSON object, padded with spaces to a multiple of 8:
//             {"__metadata__": {str: str}            (optional)
//              "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   the rest  the data buffer; offsets are relative to its start, tensors row-major little-endian,
//             contiguous and in order, covering the whole buffer with no gap and no overlap.
// The writer keeps the tensors in the order given (the header lists them in that order too). The reader
// checks all of the above and reports anything wrong as one line naming the file and the problem.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/input_file.h"

namespace ts::ckpt {

// The element types trainscope writes and reads ("F64", "F32", "F16", "BF16", "I64", "I32", "I8", "U8").
enum class TensorDType { kF64, kF32, kF16, kBF16, kI64, kI32, kI8, kU8 };

// "[2, 3]": a shape as error messages and the checkpoint index show it.
std::string shapeText(const std::vector<std::int64_t>& shape);
std::string_view tensorDTypeName(TensorDType t);
std::size_t tensorDTypeSize(TensorDType t);
std::optional<TensorDType> parseTensorDType(std::string_view name);
TensorDType tensorDType(DType t);  // every trainscope DType has a safetensors name

// A named tensor in host memory, read-only (what is saved; what a loaded file holds). `data` may be
// unaligned in a loaded file (offsets need not be multiples of the element size): copy it with memcpy.
struct TensorView {
  std::string name;
  TensorDType dtype = TensorDType::kF32;
  std::vector<std::int64_t> shape;  // [] is a scalar (1 element); a 0 anywhere makes it empty
  const void* data = nullptr;
  std::int64_t elements() const;
  std::size_t bytes() const { return static_cast<std::size_t>(elements()) * tensorDTypeSize(dtype); }
};

// A named tensor to fill from a file (what a model or optimizer expects, and where it goes).
struct MutableTensorView {
  std::string name;
  TensorDType dtype = TensorDType::kF32;
  std::vector<std::int64_t> shape;
  void* data = nullptr;
};

struct WrittenFile {
  std::uint64_t bytes = 0;                  // the file's size
  std::vector<std::uint64_t> tensorHashes;  // ContentHash of each tensor's bytes, in the order given
};

// Writes the tensors atomically (base/atomic_file.h). Names must be unique, non-empty, valid UTF-8 and
// not "__metadata__" (Error otherwise: the caller built a bad list).
WrittenFile writeSafetensors(const std::string& path, std::span<const TensorView> tensors,
                             const std::map<std::string, std::string>& metadata = {});

// What a safetensors file holds: its tensors in file (offset) order, their views pointing into the bytes.
struct SafetensorsContents {
  std::vector<TensorView> tensors;
  std::map<std::string, std::string> metadata;
};

// Checks and reads the bytes of a safetensors file (all of it), which may come from anyone: UsageError
// "ORIGIN: <what is wrong>" for anything truncated, inconsistent or not safetensors.
SafetensorsContents parseSafetensors(std::span<const std::uint8_t> bytes, const std::string& origin);

// The most a safetensors file read whole may be (a rank's parameters and optimizer state).
inline constexpr std::uint64_t kMaxSafetensorsBytes = std::uint64_t{1} << 40;

// A safetensors file, read whole into memory and validated. Views point into that memory: valid while this object
// lives. Read, not mapped: a mapped file truncated while it is read kills the process with SIGBUS; read, it is a
// UsageError naming the file (base/input_file.h).
class SafetensorsFile {
 public:
  // UsageError "PATH: <what is wrong>" for a missing, truncated or corrupt file ("cannot read PATH: ..." for one
  // that is not a regular file, or is more than kMaxSafetensorsBytes).
  static SafetensorsFile open(const std::string& path);
  // The same, from a file already opened (whose size the caller checked).
  static SafetensorsFile read(const InputFile& file);

  const std::string& path() const { return path_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in file (offset) order
  const TensorView* find(std::string_view name) const;                 // null when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The whole file (where each view's bytes are).
  std::span<const std::uint8_t> fileBytes() const { return bytes_; }

  // Copies every tensor of `into` from this file, after checking that the file holds exactly these
  // names with these dtypes and shapes (UsageError naming the file and the first differences).
  void restore(std::span<const MutableTensorView> into) const;

 private:
  SafetensorsFile(std::string path, std::vector<std::uint8_t> bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}
  std::string path_;
  std::vector<std::uint8_t> bytes_;  // the whole file (a vector: a move keeps its buffer, where the views point)
  std::vector<TensorView> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// A safetensors file read a tensor at a time: its header read and checked when opened (as parseSafetensors checks a
// whole file, against the file's size), a tensor's bytes read (pread) only when asked. For files read a few tensors
// of: a checkpoint's rank files, of which a resume on another layout needs some pieces.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(InputFile file);  // UsageError "PATH: <what is wrong>", as SafetensorsFile::open

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in file order; their data is null
  const TensorView* find(std::string_view name) const;                 // null when absent
  // The bytes of `t` (one of tensors(): t.bytes() of them) into `into`; UsageError when the file is shorter now.
  void read(const TensorView& t, void* into) const;
  std::uint64_t headerBytes() const { return dataStart_; }  // what the open read: 8 + the header's length

 private:
  InputFile file_;
  std::vector<TensorView> tensors_;
  std::vector<std::uint64_t> begins_;  // where each tensor's bytes start in the data buffer
  std::map<std::string, std::size_t, std::less<>> index_;
  std::uint64_t dataStart_ = 0;
};

}  // namespace ts::ckpt
