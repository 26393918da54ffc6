#include "bench/parse_errors.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "bench/commands.h"
#include "bench/help_format.h"

namespace ts {
namespace {

std::string bare(const std::string& name) { return name.substr(std::min(name.find_first_not_of('-'), name.size())); }

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours, one each.
std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The names the help shows for `sub`'s options (not an alias, not a hidden one): what a suggestion may name.
std::vector<std::string> shownNames(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->get_group().empty()) continue;
    const std::vector<std::string> aliases = aliasesOf(opt);
    const auto add = [&](const std::string& n) {
      if (std::find(aliases.begin(), aliases.end(), n) == aliases.end()) out.push_back(n);
    };
    for (const std::string& s : opt->get_snames()) add("-" + s);
    for (const std::string& l : opt->get_lnames()) add("--" + l);
  }
  return out;
}

bool looksLikeOption(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !(std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');
}

// What CLI11 calls extras: the arguments no option of `sub` took, in the order given (`extras`, as CLI11 keeps them;
// its message lists them reversed).
std::string extrasLine(const CLI::App& sub, const std::vector<std::string>& extras) {
  std::vector<std::string> unknown, unexpected;
  for (std::size_t i = 0; i < extras.size(); ++i) {
    if (!looksLikeOption(extras[i])) {
      // The value given to an unknown option is no argument of its own.
      if (i > 0 && looksLikeOption(extras[i - 1]) && extras[i - 1].find('=') == std::string::npos) continue;
      unexpected.push_back(fmt::format("'{}'", extras[i]));
      continue;
    }
    const std::string typed = extras[i].substr(0, extras[i].find('='));
    const std::string near = closestName(typed, shownNames(sub));
    unknown.push_back(near.empty() ? typed : fmt::format("{} (did you mean {}?)", typed, near));
  }
  std::vector<std::string> parts;
  if (!unknown.empty())
    parts.push_back(fmt::format("unknown option{} {}", unknown.size() > 1 ? "s" : "", fmt::join(unknown, ", ")));
  if (!unexpected.empty())
    parts.push_back(fmt::format("unexpected argument{} {}", unexpected.size() > 1 ? "s" : "", fmt::join(unexpected, ", ")));
  if (parts.empty()) return fmt::format("{}: unexpected arguments", sub.get_name());
  return fmt::format("{}: {}", sub.get_name(), fmt::join(parts, "; "));
}

bool isFlag(const CLI::App& sub, const std::string& name) {
  const CLI::Option* opt = sub.get_option_no_throw(name);
  return opt && opt->get_expected_max() == 0;
}

// CLI11's conversion and count errors, which name the option first.
std::string rewritten(const CLI::App& sub, const std::string& what) {
  std::smatch m;
  if (std::regex_match(what, m, std::regex("Could not convert: (\\S+) = (.*)")))
    return isFlag(sub, m[1]) ? fmt::format("{} is a flag: give it alone (or ={{true,false}}), not '{}'", m[1].str(), m[2].str())
                             : fmt::format("{}: cannot read '{}'", m[1].str(), m[2].str());
  if (std::regex_match(what, m, std::regex("(\\S+): too many inputs for a flag")))
    return fmt::format("{} is a flag: it takes no value", m[1].str());
  if (std::regex_match(what, m, std::regex("(\\S+): Should be true/false or a number")))
    return fmt::format("{}: expected true or false", m[1].str());
  if (std::regex_match(what, m, std::regex("The value (.*) is not an allowed value for (\\S+)")))
    return fmt::format("{}: '{}' is not a value it takes", m[2].str(), m[1].str());
  if (std::regex_match(what, m, std::regex("(\\S+): \\d+ required \\S+ missing")))
    return fmt::format("{} needs a value", m[1].str());
  if (std::regex_match(what, m, std::regex("(\\S+): At least (\\d+) required but received (\\d+)")))
    return fmt::format("{}: needs at least {} values, got {}", m[1].str(), m[2].str(), m[3].str());
  if (std::regex_match(what, m, std::regex("(\\S+): At Most (\\d+) required but received (\\d+)")))
    return fmt::format("{}: takes at most {} values, got {}", m[1].str(), m[2].str(), m[3].str());
  return what;
}

}  // namespace

std::string closestName(const std::string& typed, const std::vector<std::string>& names) {
  const std::string t = bare(typed);
  if (t.size() < 2) return "";  // one letter is close to every other letter
  // A typo: about one edit in four letters, at most three.
  const std::size_t allowed = std::min<std::size_t>(3, std::max<std::size_t>(1, t.size() / 4));
  std::string best;
  std::size_t bestDistance = allowed + 1;
  for (const std::string& n : names) {
    const std::size_t d = editDistance(t, bare(n));
    if (d < bestDistance) {
      bestDistance = d;
      best = n;
    }
  }
  return best;
}

std::string parseErrorLine(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args) {
  std::vector<std::string> names;
  for (const Subcommand& command : subcommands()) names.push_back(command.name);
  const std::string first = args.size() > 1 ? args[1] : "";
  if (std::find(names.begin(), names.end(), first) == names.end()) {
    // CLI11 says only "A subcommand is required", also for a misspelt one.
    if (first.empty() || first[0] == '-') return fmt::format("a subcommand is required: {}", fmt::join(names, ", "));
    const std::string near = closestName(first, names);
    return fmt::format("unknown subcommand '{}'{}: expected one of {}", first.substr(0, 64),
                       near.empty() ? "" : fmt::format(" (did you mean {}?)", near), fmt::join(names, ", "));
  }
  const CLI::App& sub = *app.get_subcommand(first);
  // CLI11 names the extras error after the app that throws it, not its kind.
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) return extrasLine(sub, app.remaining(true));
  return rewritten(sub, e.what());
}

}  // namespace ts
