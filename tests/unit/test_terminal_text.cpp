// What trainscope prints of text from outside (base/terminal_text.h): no byte that steers a terminal gets through.
#include <gtest/gtest.h>

#include <string>

#include "base/terminal_text.h"

namespace ts {
namespace {

TEST(TerminalText, ControlBytesBecomeEscapes) {
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("a\nb\tc\rd\x07"), "a\\x0ab\\x09c\\x0dd\\x07");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
}

TEST(TerminalText, PrintableTextAndUtf8AreKept) {
  EXPECT_EQ(printable("suite quick (bench/suites/quick.toml): 3 steps"), "suite quick (bench/suites/quick.toml): 3 steps");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80"),
            "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80");
  EXPECT_EQ(printable(""), "");
}

TEST(TerminalText, C1ControlsBidiOverridesAndInvalidUtf8AreEscaped) {
  EXPECT_EQ(printable("a\xc2\x9b"
                      "31mb"),
            "a\\xc2\\x9b31mb");  // U+009B: CSI on a terminal that reads C1
  EXPECT_EQ(printable("\xe2\x80\xae"
                      "txt.exe"),
            "\\xe2\\x80\\xaetxt.exe");                        // U+202E: shown right to left
  EXPECT_EQ(printable("\xe2\x81\xa6x"), "\\xe2\\x81\\xa6x");  // U+2066
  EXPECT_EQ(printable("\x9b"
                      "2J"),
            "\\x9b2J");                                     // a lone 8-bit CSI
  EXPECT_EQ(printable("\xc3"), "\\xc3");                    // cut short
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

TEST(TerminalText, ABlockKeepsItsNewlinesOnly) {
  EXPECT_EQ(printableLines("host a\x1b]0;x\x07\nnext\r\n"), "host a\\x1b]0;x\\x07\nnext\\x0d\n");
}

}  // namespace
}  // namespace ts
