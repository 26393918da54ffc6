#pragma once
// A command line that does not parse, said in our words (main.cpp prints the line): the subcommand named when
// none or a misspelt one came first, "did you mean --steps?" for an unknown option (the closest of the
// subcommand's own options), and CLI11's own texts ("Could not convert: --resume = maybe", "--steps: 1 required
// INT missing", "The following arguments were not expected: --bogus --stpes") rewritten without its internals.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ts {

// The error line for `e`, raised parsing `args` (argv) with `app`, whose subcommands are subcommands().
std::string parseErrorLine(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args);

// The one of `names` closest to `typed` by edit distance (a swap of two neighbours counts one), when it is close
// enough to be a typo of it; "" otherwise. Leading dashes are not compared ("--stpes" -> "--steps").
std::string closestName(const std::string& typed, const std::vector<std::string>& names);

}  // namespace ts
