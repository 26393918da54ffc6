#pragma once
// Text from outside trainscope (a suite's and its steps' names, labels, file names, host names from peers,
// environment values) as it may reach a terminal: a control byte in it would steer the terminal instead of
// being read (ESC starts a sequence that can clear the screen, retitle the window or rewrite what was printed;
// a newline forges a line of our own). Every such byte is written \xNN (docs/reliability.md "Hostile input
// on the command line").
//
//   printable("a\x1b[2Jb\n")   -> "a\\x1b[2Jb\\x0a"
//   printable("caf\xc3\xa9")   -> "café" (printable UTF-8 stays)
#include <string>
#include <string_view>

namespace ts {

// One line whatever was given: ASCII control bytes (newline and tab included) and DEL, C1 controls (U+0080 to
// U+009F), the bidirectional overrides and isolates that reorder what a terminal shows (U+202A to U+202E, U+2066
// to U+2069) and every byte that is no part of valid UTF-8 become \xNN, each byte of them; the rest is kept.
std::string printable(std::string_view text);

// The same for a block of lines (the inventory): its newlines are kept, everything else escaped as above.
std::string printableLines(std::string_view text);

}  // namespace ts
