// One name per concept across subcommands (issue #35): an option renamed keeps its old name as an alias, and
// another tool's spelling (nccl-tests' -T, -J) is an alias too. Each alias is the same option as its canonical
// name, takes a value the same way, and the help lists it as an alias, not as a name of its own.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/commands.h"
#include "bench/help_format.h"
#include "bench/parse_errors.h"
#include "tests/unit/command_lines.h"

namespace ts {
namespace {

// "--x,--y,!--no-x" -> the first name that sets it and the first that clears it ("" if none).
std::pair<std::string, std::string> firstNames(const std::string& names) {
  const auto bang = names.find(",!");
  const std::string set = names.substr(0, bang), clear = bang == std::string::npos ? "" : names.substr(bang + 2);
  return {set.substr(0, set.find(',')), clear.substr(0, clear.find(','))};
}

std::vector<std::string> split(const std::string& names) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= names.size();) {
    const std::size_t end = std::min(names.find(',', start), names.size());
    out.push_back(names.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

using test::CommandLine;

// A value the option takes: a flag none, a number 1, text "x".
std::vector<std::string> someValue(const CLI::Option& option) {
  if (option.get_expected_max() == 0) return {};
  return {option.get_type_name().rfind("{", 0) == 0 ? option.get_type_name().substr(1, option.get_type_name().find(',') - 1)
                                                    : "1"};
}

std::vector<std::string> parsed(const Subcommand& command, const std::string& name) {
  CommandLine cl(command);
  const CLI::Option* option = cl.sub->get_option(name);
  std::vector<std::string> args = {"trainscope", command.name, name};
  for (const std::string& v : someValue(*option)) args.push_back(v);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  cl.app.parse(static_cast<int>(argv.size()), argv.data());
  return option->results();
}

TEST(OptionAliases, EachAliasParsesToTheSameAsItsCanonicalName) {
  int aliases = 0;
  for (const Subcommand& command : subcommands())
    for (const OptionInfo& info : command.options)
      for (const std::string& alias : info.aliases) {
        const auto [canonicalSet, canonicalClear] = firstNames(info.names);
        const auto bang = alias.find(",!");
        std::vector<std::pair<std::string, std::string>> pairs;  // alias, its canonical name
        for (const std::string& a : split(alias.substr(0, bang))) pairs.emplace_back(a, canonicalSet);
        if (bang != std::string::npos)
          for (const std::string& a : split(alias.substr(bang + 2))) pairs.emplace_back(a, canonicalClear);
        for (const auto& [a, canonical] : pairs) {
          SCOPED_TRACE(command.name + " " + a + " / " + canonical);
          ++aliases;
          CommandLine cl(command);
          ASSERT_NE(cl.sub->get_option_no_throw(a), nullptr);
          EXPECT_EQ(cl.sub->get_option_no_throw(a), cl.sub->get_option_no_throw(canonical));
          EXPECT_EQ(parsed(command, a), parsed(command, canonical));
        }
      }
  // train's --warmup-steps, kernels' --ceilings and --no-ceilings, collectives' -T and -J: at least these.
  EXPECT_GE(aliases, 5);
}

TEST(OptionAliases, TheRenamedOptionsAnswerToTheSharedNames) {
  const auto has = [](const std::string& command, const std::string& name) {
    for (const Subcommand& c : subcommands())
      if (c.name == command) return CommandLine(c).sub->get_option_no_throw(name) != nullptr;
    return false;
  };
  for (const char* name : {"-w", "--warmup", "--warmup-steps", "--ceiling", "--no-ceiling", "--timeout", "--json"})
    EXPECT_TRUE(has("train", name)) << name;
  for (const char* name : {"-w", "--warmup", "--ceiling", "--no-ceiling", "--ceilings", "--no-ceilings", "--timeout", "--json"})
    EXPECT_TRUE(has("kernels", name)) << name;
  for (const char* name : {"-w", "--warmup", "--timeout", "-T", "--json", "-J"}) EXPECT_TRUE(has("collectives", name)) << name;
}

TEST(OptionAliases, TheHelpNamesAnAliasAfterTheDescriptionNotAsAName) {
  for (const Subcommand& c : subcommands()) {
    if (c.name != "kernels") continue;
    CLI::App app;
    app.formatter(helpFormatter());
    CLI::App* sub = app.add_subcommand(c.name);
    c.addToCommandLine(*sub);
    const std::string help = sub->help();
    EXPECT_NE(help.find("--ceiling "), std::string::npos) << help;
    EXPECT_NE(help.find("(alias: --ceilings)"), std::string::npos) << help;
    EXPECT_EQ(help.find("--ceiling,--ceilings"), std::string::npos) << help;
  }
}

TEST(ClosestName, ATypoFindsItsOptionAndNothingElseDoes) {
  const std::vector<std::string> names = {"--steps", "--model", "--seed", "-n", "--no-ceiling"};
  EXPECT_EQ(closestName("--stpes", names), "--steps");  // a swap counts one
  EXPECT_EQ(closestName("--modle", names), "--model");
  EXPECT_EQ(closestName("--no-celing", names), "--no-ceiling");
  EXPECT_EQ(closestName("--frobnicate", names), "");
  EXPECT_EQ(closestName("-N", names), "");  // one letter is near every other
  EXPECT_EQ(closestName("--sed", names), "--seed");
}

}  // namespace
}  // namespace ts
