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

// Why a number a user gave (as `text`) is no setting, "" when it is one: NaN and the infinities are
// never one, and a NaN would pass every range check after it (each comparison with it is false).
// "nan is not a finite number".
std::string nonFiniteReason(double value, std::string_view text);

}  // namespace ts
