#pragma once
// Finding a dataset's files, with errors that say which file is missing and where it was looked for, and opening
// them as files trainscope did not write (base/input_file.h): a FIFO or a device is one line, and samples are read
// with pread, so a file truncated while training is an error line instead of a SIGBUS.
#include <cstdint>
#include <string>
#include <vector>

#include "base/input_file.h"

namespace ts::data {

// The most a data file read a sample at a time may be: its size costs no memory, only the offsets must hold.
inline constexpr std::uint64_t kMaxDataFileBytes = std::uint64_t{1} << 40;
// The most a data file read whole at the start may be (CIFAR-10's batches for their labels, MNIST's labels): the
// real ones are 31 MB and 60 kB.
inline constexpr std::uint64_t kMaxWholeDataFileBytes = std::uint64_t{1} << 30;

// `path` opened for reading: UsageError "cannot read PATH: ..." when it is not a regular file within `maxBytes`.
InputFile openDataFile(const std::string& path, std::uint64_t maxBytes = kMaxDataFileBytes);

// UsageError "directory DIR does not exist" / "DIR is not a directory".
void requireDirectory(const std::string& dir);

// The first of `names` that exists in `dir`. When none does: UsageError naming the first name and the
// directory, with a hint when a compressed copy (NAME.gz) is there instead.
std::string findDatasetFile(const std::string& dir, const std::vector<std::string>& names);

// A big-endian 32-bit word (IDX headers).
std::uint32_t readBigEndian32(const std::uint8_t* p);

}  // namespace ts::data
