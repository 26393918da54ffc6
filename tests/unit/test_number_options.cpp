// Every number option of every subcommand refuses what is no setting, on the command line and in a suite
// step, before anything runs: NaN and the infinities (a NaN momentum once trained and then died writing
// the record), values outside the option's range (a weight decay of 1e308), and a minus sign on an
// unsigned option (--seed -1 wrapped to 2^64 - 1). The options are read from the registry, so an option
// added later is walked too; and each real-valued one must declare its range.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "bench/commands.h"
#include "tests/unit/command_lines.h"

namespace ts {
namespace {

using test::CommandLine;
using test::commandNamed;
using test::suiteError;
using test::tableCommands;

const char* const kNotNumbers[] = {"nan", "NaN", "inf", "-inf", "1e999", "-1e999"};

TEST(NumberOptions, NoCommandLineNumberOptionTakesNaNOrInfinity) {
  int walked = 0;
  for (const Subcommand* command : tableCommands()) {
    std::vector<std::string> names;
    const CommandLine declared(*command);
    for (const CLI::Option* o : declared.sub->get_options()) {
      const std::string type = o->get_type_name();
      if (type.rfind("FLOAT", 0) == 0 || type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) names.push_back(o->get_name());
    }
    for (const std::string& name : names)
      for (const char* value : kNotNumbers) {
        SCOPED_TRACE(command->name + " " + name + " " + value);
        const std::string error = CommandLine(*command).parse(command->name, name, value);
        EXPECT_FALSE(error.empty()) << "accepted";
        EXPECT_NE(error.find(name), std::string::npos) << "the error names the option: " << error;
        ++walked;
      }
  }
  EXPECT_GT(walked, 6 * 30);  // the train table alone has more than 30 number options
}

TEST(NumberOptions, NoSuiteNumberKeyTakesNaNOrInfinity) {
  int walked = 0;
  for (const Subcommand* command : tableCommands()) {
    if (!command->readStep) continue;
    for (const OptionInfo& option : command->options) {
      if (!option.number || option.scope == OptionScope::kCommandLineOnly) continue;
      for (const char* value : {"nan", "inf", "-inf"}) {
        SCOPED_TRACE(command->name + " " + option.key + " = " + value);
        const toml::table step = toml::parse(option.key + " = " + value);
        StepReader reader("s.toml", step);
        try {
          command->readStep(reader);
          ADD_FAILURE() << "accepted";
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("'" + option.key + "'"), std::string::npos) << e.what();
        }
        ++walked;
      }
    }
  }
  EXPECT_GT(walked, 3 * 30);
}

TEST(NumberOptions, EveryRealValuedOptionDeclaresItsRange) {
  for (const Subcommand* command : tableCommands())
    for (const OptionInfo& option : command->options)
      if (option.real) {
        EXPECT_TRUE(option.range) << command->name << " " << option.names << ": give it .range({lo, hi})";
      }
}

// The finite numbers out of each declared range, on both sides; the ends as declared.
TEST(NumberOptions, ValuesOutsideTheRangeAreRefusedOnBothSides) {
  int walked = 0;
  for (const Subcommand* command : tableCommands())
    for (const OptionInfo& option : command->options) {
      if (!option.range) continue;
      const NumberRange r = *option.range;
      const std::string name = option.names.substr(option.names.rfind(',') + 1);
      for (double v : {r.lo - 1, r.hi + 1, r.hi * 10 + 1, -1e308, 1e308}) {
        if (r.contains(v)) continue;
        const std::string text = fmt::format("{}", v);
        SCOPED_TRACE(command->name + " " + name + " " + text);
        const std::string error = CommandLine(*command).parse(command->name, name, text);
        if (option.real)
          EXPECT_NE(error.find("is not in " + r.describe()), std::string::npos) << error;
        else  // an integer's words: "must be a positive integer, got 0", "2147483648 is out of range (at most 2147483647)"
          EXPECT_TRUE(error.find("is out of range (at most") != std::string::npos ||
                      error.find(": must be ") != std::string::npos)
              << error;
        if (command->readStep && option.scope != OptionScope::kCommandLineOnly) {
          const toml::table step = toml::parse(fmt::format("{} = {:.17g}", option.key, v));
          StepReader reader("s.toml", step);
          EXPECT_THROW(command->readStep(reader), UsageError);
        }
        ++walked;
      }
      for (const auto& [end, open] : {std::pair{r.lo, r.loOpen}, std::pair{r.hi, r.hiOpen}}) {
        const std::string text = option.real ? fmt::format("{}", end) : fmt::format("{:.0f}", end);
        const std::string error = CommandLine(*command).parse(command->name, name, text);
        EXPECT_EQ(!error.empty(), open) << name << " " << text << ": " << error;
      }
    }
  EXPECT_GT(walked, 15);
}

TEST(NumberOptions, AnUnsignedOptionTakesNoMinusSign) {
  const Subcommand& train = commandNamed("train");
  EXPECT_NE(CommandLine(train).parse("train", "--seed", "-1").find("--seed: must be a non-negative integer, got -1"),
            std::string::npos);
  EXPECT_EQ(CommandLine(train).parse("train", "--seed", "18446744073709551615"), "");
  EXPECT_NE(suiteError(train, "seed = -1").find("s.toml:1: 'seed': must be a non-negative integer, got -1"), std::string::npos);
}

// What a user typed that is no value of an integer option, each said in our words: never CLI11's "Could not convert" or
// "At Most 1 required but received 2", and never taken (an int64 option once took 99999999999999999999 as 2^63 - 1 steps).
TEST(NumberOptions, EveryIntegerOptionSaysWhatIsWrongInOurWords) {
  const std::pair<const char*, const char*> cases[] = {
      {"99999999999999999999", "99999999999999999999 is out of range (at most "},
      {"-99999999999999999999", "got -99999999999999999999"},
      {"1.5", "must be an integer, got '1.5'"},
      {"abc", "must be an integer, got 'abc'"},
      {"0x10", "must be an integer, got '0x10'"},  // CLI11 read it as 16, and 010 as 8
  };
  int walked = 0;
  for (const Subcommand* command : tableCommands()) {
    const CommandLine declared(*command);
    for (const CLI::Option* o : declared.sub->get_options()) {
      const std::string type = o->get_type_name();
      if (type.rfind("INT", 0) != 0 && type.rfind("UINT", 0) != 0) continue;
      const std::string name = o->get_name();
      for (const auto& [value, want] : cases) {
        SCOPED_TRACE(command->name + " " + name + " " + value);
        const std::string error = CommandLine(*command).parse(command->name, name, value);
        EXPECT_EQ(error.rfind(name + ": ", 0), 0u) << error;
        EXPECT_NE(error.find(want), std::string::npos) << error;
        ++walked;
      }
    }
  }
  EXPECT_GT(walked, 5 * 40);
}

TEST(NumberOptions, ACountSaysItsRangeOnBothSides) {
  const Subcommand& train = commandNamed("train");
  EXPECT_EQ(CommandLine(train).parse("train", "--batch", "-1"), "--batch: must be a positive integer, got -1");
  EXPECT_EQ(CommandLine(train).parse("train", "--steps", "2147483648"),
            "--steps: 2147483648 is out of range (at most 2147483647)");
  EXPECT_EQ(CommandLine(train).parse("train", "--log-every", "-5"), "--log-every: must be a non-negative integer, got -5");
  EXPECT_EQ(CommandLine(train).parse("train", "--steps", "010"), "");  // decimal, as it reads
  EXPECT_EQ(suiteError(train, "batch = -1"), "s.toml:1: 'batch': must be a positive integer, got -1");
  EXPECT_EQ(suiteError(train, "steps = 2147483648"), "s.toml:1: 'steps': 2147483648 is out of range (at most 2147483647)");
  const Subcommand& collectives = commandNamed("collectives");
  EXPECT_EQ(CommandLine(collectives).parse("collectives", "--iters", "0"), "--iters: must be a positive integer, got 0");
  EXPECT_EQ(CommandLine(collectives).parse("collectives", "--iters", "2147483648"),
            "--iters: 2147483648 is out of range (at most 2147483647)");
  EXPECT_EQ(suiteError(collectives, "warmup = -1"), "s.toml:1: 'warmup': must be a non-negative integer, got -1");
}

}  // namespace
}  // namespace ts
