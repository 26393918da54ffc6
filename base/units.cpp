#include "base/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

std::uint64_t parseBytes(std::string_view text, std::string_view what) {
  auto bad = [&] {
    return UsageError(fmt::format(
        "{}: '{}' is not a size (expected a whole number of bytes with an optional K, M or G suffix, e.g. 8, 64K, 4M)", what,
        text));
  };
  std::uint64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) throw UsageError(fmt::format("{}: '{}' is too large", what, text));
  if (ec != std::errc() || ptr == first) throw bad();
  std::string suffix(ptr, last);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (suffix.empty() || suffix == "B")
    shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    shift = 30;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB")
    shift = 40;
  else
    throw bad();
  if (shift && value > (std::numeric_limits<std::uint64_t>::max() >> shift))
    throw UsageError(fmt::format("{}: '{}' is too large", what, text));
  return value << shift;
}

std::string formatBytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  if (v == static_cast<double>(static_cast<std::uint64_t>(v)))
    return fmt::format("{} {}", static_cast<std::uint64_t>(v), kUnits[u]);
  return fmt::format("{:.3g} {}", v, kUnits[u]);
}

std::string nonFiniteReason(double value, std::string_view text) {
  return std::isfinite(value) ? std::string() : fmt::format("{} is not a finite number", text);
}

}  // namespace ts
