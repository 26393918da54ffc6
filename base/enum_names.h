#pragma once
// Names of a closed choice, declared once next to its enum and read by everything that turns it into text
// or back: the command line, the suite reader, the records, the error messages.
//
//   enum class ScaleMode { kWeak, kStrong };
//   template <> struct EnumNames<ScaleMode> {
//     static constexpr std::pair<std::string_view, ScaleMode> kNames[] = {{"weak", ScaleMode::kWeak}, {"strong",
//     ScaleMode::kStrong}};
//   };
//
// The first name of a value is its canonical name (what records and help print).
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ts {

template <class E>
struct EnumNames;  // specialised per enum with kNames, as above

template <class E>
concept NamedEnum = std::is_enum_v<E> && requires {
  EnumNames<E>::kNames;
};

template <NamedEnum E>
constexpr std::string_view nameOf(E value) {
  for (const auto& [name, e] : EnumNames<E>::kNames)
    if (e == value) return name;
  return "?";  // only for a value cast from an integer outside the enum
}

template <NamedEnum E>
std::optional<E> enumFromName(std::string_view name) {
  for (const auto& [n, e] : EnumNames<E>::kNames)
    if (n == name) return e;
  return std::nullopt;
}

// "a, b or c": the canonical names, for help and error messages.
template <NamedEnum E>
std::string enumNameList() {
  std::string out;
  const auto& names = EnumNames<E>::kNames;
  std::size_t n = 0;
  for (const auto& [name, e] : names)
    if (nameOf(e) == name) ++n;
  std::size_t i = 0;
  for (const auto& [name, e] : names) {
    if (nameOf(e) != name) continue;
    out += std::string(i == 0 ? "" : (i + 1 == n ? " or " : ", ")) + std::string(name);
    ++i;
  }
  return out;
}

}  // namespace ts
