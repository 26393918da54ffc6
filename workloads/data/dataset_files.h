#pragma once
// Finding a dataset's files, with errors that say which file is missing and where it was looked for.
#include <cstdint>
#include <string>
#include <vector>

namespace ts::data {

// UsageError "directory DIR does not exist" / "DIR is not a directory".
void requireDirectory(const std::string& dir);

// The first of `names` that exists in `dir`. When none does: UsageError naming the first name and the
// directory, with a hint when a compressed copy (NAME.gz) is there instead.
std::string findDatasetFile(const std::string& dir, const std::vector<std::string>& names);

// A big-endian 32-bit word (IDX headers).
std::uint32_t readBigEndian32(const std::uint8_t* p);

}  // namespace ts::data
