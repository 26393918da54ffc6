#pragma once
// Sizes and durations as users write and read them.
#include <cstdint>
#include <string>
#include <string_view>

namespace ts {

// "8", "64K", "4M", "1G", "2KiB", "512b": binary suffixes (K = 1024). Throws UsageError naming `what`.
std::uint64_t parseBytes(std::string_view text, std::string_view what);
// 4194304 -> "4 MiB", 1536 -> "1.5 KiB", 100 -> "100 B".
std::string formatBytes(std::uint64_t bytes);

}  // namespace ts
