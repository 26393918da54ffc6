#include "base/terminal_text.h"

#include <fmt/format.h>

namespace ts {
namespace {

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0 when it is not one (a stray
// continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
std::size_t utf8Length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char lead = b(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if ((lead == 0xE0 && b(1) < 0xA0) || (lead == 0xED && b(1) >= 0xA0)) return 0;  // overlong, surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if ((lead == 0xF0 && b(1) < 0x90) || (lead == 0xF4 && b(1) >= 0x90)) return 0;  // overlong, past U+10FFFF
    return 4;
  }
  return 0;
}

// A character that steers the terminal or the order it shows text in, as its UTF-8 bytes.
bool steers(std::string_view c) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(c[i]); };
  if (c.size() == 1) return b(0) < 0x20 || b(0) == 0x7F;
  if (c.size() == 2) return b(0) == 0xC2 && b(1) <= 0x9F;                                  // C1: U+0080..U+009F
  if (c.size() == 3 && b(0) == 0xE2 && b(1) == 0x80) return b(2) >= 0xAA && b(2) <= 0xAE;  // U+202A..U+202E
  if (c.size() == 3 && b(0) == 0xE2 && b(1) == 0x81) return b(2) >= 0xA6 && b(2) <= 0xA9;  // U+2066..U+2069
  return false;
}

std::string escape(std::string_view text, bool keepNewlines) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const std::size_t n = utf8Length(text);
    const std::string_view c = text.substr(0, n ? n : 1);
    if (n && (!steers(c) || (keepNewlines && c == "\n")))
      out += c;
    else
      for (unsigned char byte : c) out += fmt::format("\\x{:02x}", byte);
    text.remove_prefix(c.size());
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) { return escape(text, false); }

std::string printableLines(std::string_view text) { return escape(text, true); }

}  // namespace ts
