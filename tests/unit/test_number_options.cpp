// Every number option of every subcommand refuses what is no setting, on the command line and in a suite
// step, before anything runs: NaN and the infinities (a NaN momentum once trained and then died writing
// the record), values outside the option's range (a weight decay of 1e308), and a minus sign on an
// unsigned option (--seed -1 wrapped to 2^64 - 1). The options are read from the registry, so an option
// added later is walked too; and each real-valued one must declare its range.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "bench/commands.h"

namespace ts {
namespace {

// The subcommand's options on a CLI::App of its own, as main adds them.
struct CommandLine {
  CLI::App app;
  CLI::App* sub;
  explicit CommandLine(const Subcommand& command) : sub(app.add_subcommand(command.name)) { command.addToCommandLine(*sub); }
  // The parse error's text, or "" when the command line was taken.
  std::string parse(const std::string& subName, const std::string& option, const std::string& value) {
    std::vector<const char*> argv = {"trainscope", subName.c_str(), option.c_str(), value.c_str()};
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }
};

std::vector<const Subcommand*> tableCommands() {
  std::vector<const Subcommand*> out;
  for (const Subcommand& c : subcommands())
    if (!c.options.empty()) out.push_back(&c);
  return out;
}

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
        EXPECT_NE(error.find("is not in " + r.describe()), std::string::npos) << error;
        if (command->readStep && option.scope != OptionScope::kCommandLineOnly) {
          const toml::table step = toml::parse(fmt::format("{} = {:.17g}", option.key, v));
          StepReader reader("s.toml", step);
          EXPECT_THROW(command->readStep(reader), UsageError);
        }
        ++walked;
      }
      for (const auto& [end, open] : {std::pair{r.lo, r.loOpen}, std::pair{r.hi, r.hiOpen}}) {
        const std::string error = CommandLine(*command).parse(command->name, name, fmt::format("{}", end));
        EXPECT_EQ(error.find("is not in") != std::string::npos, open) << name << " " << end << ": " << error;
      }
    }
  EXPECT_GT(walked, 15);
}

TEST(NumberOptions, AnUnsignedOptionTakesNoMinusSign) {
  const Subcommand* train = nullptr;
  for (const Subcommand* c : tableCommands())
    if (c->name == "train") train = c;
  ASSERT_TRUE(train);
  EXPECT_NE(CommandLine(*train).parse("train", "--seed", "-1").find("--seed: -1 is negative"), std::string::npos);
  EXPECT_EQ(CommandLine(*train).parse("train", "--seed", "18446744073709551615"), "");
  const toml::table step = toml::parse("seed = -1");
  StepReader reader("s.toml", step);
  EXPECT_THROW(train->readStep(reader), UsageError);
}

}  // namespace
}  // namespace ts
