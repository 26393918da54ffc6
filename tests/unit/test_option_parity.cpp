// Every subcommand's options are settable both from the command line and from a suite step (under the
// long name with dashes as underscores), or declare which side only and why. The test reads what each
// side really does: the options CLI11 ends up with, and the keys a suite step of that kind asks for.
#include <iterator>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "bench/commands.h"

namespace ts {
namespace {

std::string keyOfName(std::string name) {
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

// The key of the declaration the option comes from: an option renamed on the command line (train's -w/--warmup,
// once --warmup-steps) keeps its suite key among its names, as an alias.
std::string keyOf(const CLI::Option& option, const Subcommand& command) {
  for (const std::string& name : option.get_lnames())
    for (const OptionInfo& declared : command.options) {
      if (declared.key == keyOfName(name)) return declared.key;
      if (name.rfind("no-", 0) == 0 && declared.key == keyOfName(name.substr(3))) return "no_" + declared.key;  // --no-x
    }
  // A short name alone ("-t"): its key as optionKey makes it ("_t"), also for an option hidden from the help.
  return keyOfName(option.get_lnames().empty() ? "-" + option.get_snames().front() : option.get_lnames().front());
}

std::set<std::string> commandLineKeys(const Subcommand& command) {
  CLI::App app;
  CLI::App* sub = app.add_subcommand(command.name);
  command.addToCommandLine(*sub);
  std::set<std::string> keys;
  for (const CLI::Option* option : sub->get_options())
    if (option != sub->get_help_ptr()) keys.insert(keyOf(*option, command));
  // A boolean's "--no-x" is a flag of its own on the command line (its own line of help), the same setting
  // as "--x": the key x.
  for (auto it = keys.begin(); it != keys.end();)
    it = it->rfind("no_", 0) == 0 && keys.count(it->substr(3)) ? keys.erase(it) : std::next(it);
  return keys;
}

// A step with nothing but its kind: every key the step's reader asks for, and a step the defaults make.
std::set<std::string> suiteKeys(const Subcommand& command) {
  const toml::table step;
  StepReader reader("parity.toml", step);
  EXPECT_NO_THROW(command.readStep(reader)) << "a step with only its kind must take the defaults";
  return {reader.keys().begin(), reader.keys().end()};
}

TEST(OptionParity, EveryOptionIsSettableFromTheCommandLineAndFromASuiteStep) {
  int stepKinds = 0;
  for (const Subcommand& command : subcommands()) {
    if (!command.readStep) continue;
    ++stepKinds;
    SCOPED_TRACE(command.name);
    std::set<std::string> cli = commandLineKeys(command), suite = suiteKeys(command);
    EXPECT_FALSE(command.options.empty() && !cli.empty()) << "options declared outside the table";
    for (const OptionInfo& option : command.options) {
      SCOPED_TRACE(option.names);
      if (option.scope == OptionScope::kBoth) continue;
      EXPECT_FALSE(option.why.empty()) << "an option settable from one side only says why";
      if (option.scope == OptionScope::kCommandLineOnly) {
        EXPECT_TRUE(cli.count(option.key) == 1 && suite.count(option.key) == 0);
        cli.erase(option.key);
      } else {
        EXPECT_TRUE(suite.count(option.key) == 1 && cli.count(option.key) == 0);
        suite.erase(option.key);
      }
    }
    EXPECT_EQ(cli, suite) << "the command line and the suite step take different options";
  }
  EXPECT_EQ(stepKinds, 6);  // env, links, collectives, kernels, train, scale
}

TEST(OptionParity, TheSuiteStepKindsAreTheRegisteredSubcommands) {
  std::set<std::string> names;
  for (const Subcommand& command : subcommands())
    EXPECT_TRUE(names.insert(command.name).second) << command.name << " registered twice";
  for (const char* kind : {"env", "links", "collectives", "kernels", "train", "scale"}) EXPECT_EQ(names.count(kind), 1u) << kind;
}

}  // namespace
}  // namespace ts
