#pragma once
// The help as trainscope writes it: each option under its own names, its aliases (an old name kept working,
// nccl-tests' letter) said after its description, "(alias: --warmup-steps)", instead of listed as names of
// their own; options under their table's headings (OptionTable::group). main.cpp sets it on the top app,
// whose subcommands inherit it.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ts {

// `names` of `option` are aliases; the help lists them after its description.
void markAliases(const CLI::Option* option, std::vector<std::string> names);
// The aliases marked for `option` that it has ("" when none).
std::vector<std::string> aliasesOf(const CLI::Option* option);

std::shared_ptr<CLI::Formatter> helpFormatter();

}  // namespace ts
