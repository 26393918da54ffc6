// The checks every number option gets from its type (bench/option_table.h), so that an option added later
// is covered without being listed anywhere.
#include <charconv>
#include <string>
#include <string_view>

#include "base/units.h"
#include "bench/option_table.h"

namespace ts::option_detail {
namespace {

// An integer as typed: its sign and magnitude; `huge` past 64 bits (beyond every bound on its side).
struct Typed {
  bool negative = false;
  unsigned long long magnitude = 0;
  bool huge = false;
  std::string shown;  // as the user reads it back
};

Typed typedOf(long long v) {
  Typed t;
  t.negative = v < 0;
  t.magnitude = t.negative ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  t.shown = std::to_string(v);
  return t;
}

// Decimal digits after an optional sign; nothing else (no spaces, no 0x, no exponent).
std::optional<Typed> readTyped(std::string_view text) {
  Typed t;
  t.shown = std::string(text);
  std::string_view digits = text;
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
    t.negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t.magnitude);
  t.huge = ec == std::errc::result_out_of_range;
  if (t.magnitude == 0 && !t.huge) t.negative = false;  // -0 is 0
  return t;
}

std::string problemOf(const Typed& t, const IntegerBounds& b) {
  bool below = false;
  if (t.negative) {
    const unsigned long long loMagnitude = b.lo < 0 ? 0ULL - static_cast<unsigned long long>(b.lo) : 0;
    below = b.lo >= 0 || t.huge || t.magnitude > loMagnitude;
  } else {
    below = b.lo > 0 && !t.huge && t.magnitude < static_cast<unsigned long long>(b.lo);
  }
  if (below) {
    if (b.lo == 1) return fmt::format("must be a positive integer, got {}", t.shown);
    if (b.lo == 0) return fmt::format("must be a non-negative integer, got {}", t.shown);
    return fmt::format("must be an integer of at least {}, got {}", b.lo, t.shown);
  }
  if (!t.negative && (t.huge || t.magnitude > b.hi)) return fmt::format("{} is out of range (at most {})", t.shown, b.hi);
  return "";
}

}  // namespace

std::string integerProblem(long long value, const IntegerBounds& b) { return problemOf(typedOf(value), b); }

CLI::Validator integerIn(std::shared_ptr<const IntegerBounds> b) {
  return CLI::Validator(
      [b](std::string& text) {
        const std::optional<Typed> t = readTyped(text);
        if (!t) return fmt::format("must be an integer, got '{}'", text);
        if (std::string why = problemOf(*t, *b); !why.empty()) return why;
        text = (t->negative ? "-" : "") + std::to_string(t->magnitude);  // decimal, as CLI11 will read it
        return std::string();
      },
      "");
}

CLI::Validator finiteNumber() {
  return CLI::Validator(
      [](std::string& text) {
        double value = 0;
        // Read as CLI11 will read it.
        if (!CLI::detail::lexical_cast(text, value)) return fmt::format("must be a number, got '{}'", text);
        return nonFiniteReason(value, text);
      },
      "");
}

}  // namespace ts::option_detail

namespace ts::option_detail {

CLI::Validator onOff() {
  return CLI::Validator(
      [](std::string& text) {
        if (text == "on" || text == "off") {
          text = text == "on" ? "1" : "0";  // as CLI11 reads a bool
          return std::string();
        }
        return fmt::format("'{}' is not on or off", text);
      },
      "");
}

}  // namespace ts::option_detail
