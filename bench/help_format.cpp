#include "bench/help_format.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "bench/option_table.h"

namespace ts {
namespace {

// Marked while the command line is declared, read by the help: one process's options, never freed before it exits.
std::map<const CLI::Option*, std::vector<std::string>>& marks() {
  static std::map<const CLI::Option*, std::vector<std::string>> m;
  return m;
}
std::mutex& marksLock() {
  static std::mutex m;
  return m;
}

class Formatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    if (positional) return CLI::Formatter::make_option_name(opt, positional);
    const std::vector<std::string> aliases = aliasesOf(opt);
    std::vector<std::string> names;
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    std::erase_if(names, [&](const std::string& n) { return std::find(aliases.begin(), aliases.end(), n) != aliases.end(); });
    return fmt::format("{}", fmt::join(names, ","));
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    const std::vector<std::string> aliases = aliasesOf(opt);
    const std::string desc = CLI::Formatter::make_option_desc(opt);
    if (aliases.empty()) return desc;
    return fmt::format("{} (alias: {})", desc, fmt::join(aliases, ", "));
  }
};

}  // namespace

void markAliases(const CLI::Option* option, std::vector<std::string> names) {
  std::lock_guard lock(marksLock());
  if (names.empty())
    marks().erase(option);  // a freed option's marks are not this one's
  else
    marks()[option] = std::move(names);
}

std::vector<std::string> aliasesOf(const CLI::Option* option) {
  std::vector<std::string> out;
  {
    std::lock_guard lock(marksLock());
    if (const auto it = marks().find(option); it != marks().end()) out = it->second;
  }
  // An option made later at a freed one's address (tests build many apps) has none of its names.
  std::erase_if(out, [option](const std::string& n) { return !option->check_name(n); });
  return out;
}

std::shared_ptr<CLI::Formatter> helpFormatter() { return std::make_shared<Formatter>(); }

void describeInHelp(CLI::App& app, std::size_t from, const OptionInfo& info) {
  const std::vector<CLI::Option*> options = app.get_options();
  const std::vector<std::string> aliases = aliasNames(info);
  for (std::size_t i = from; i < options.size(); ++i) {
    if (info.hidden)
      options[i]->group("");  // CLI11's hidden group
    else if (!info.group.empty())
      options[i]->group(info.group);
    std::vector<std::string> mine;
    for (const std::string& a : aliases)
      if (options[i]->check_name(a)) mine.push_back(a);
    markAliases(options[i], std::move(mine));
  }
}

}  // namespace ts
