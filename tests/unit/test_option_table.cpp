// The option table reads each kind of field the same way from the command line and from a suite step,
// and turns a bad suite value into one UsageError naming the file, line and key.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "base/error.h"
#include "bench/option_table.h"

namespace ts {

enum class Colour { kRed, kGreen };
template <>
struct EnumNames<Colour> {
  static constexpr std::pair<std::string_view, Colour> kNames[] = {
      {"red", Colour::kRed}, {"green", Colour::kGreen}, {"verde", Colour::kGreen}};
};

namespace {

struct Fields {
  bool flag = false, check = true, overlap = true;
  int count = 1;
  std::uint64_t seed = 7;
  double rate = 0.5;
  std::string text = "a", list = "x", size = "8";
  std::vector<std::string> sets;
  std::vector<int> split;
  Colour colour = Colour::kRed;
  std::vector<Colour> colours = {Colour::kRed, Colour::kGreen};
  std::string only;
};

OptionTable<Fields> table() {
  OptionTable<Fields> t;
  t.add("--flag", "a flag", TS_FIELD(flag));
  t.add("--check,!--no-check", "a flag and its negation", TS_FIELD(check));
  t.addOnOff("--overlap", "on or off", TS_FIELD(overlap));
  t.add("-c,--count", "an int", TS_FIELD(count));
  t.add("--seed", "an unsigned", TS_FIELD(seed));
  t.add("--rate", "a double", TS_FIELD(rate));
  t.add("--text", "text", TS_FIELD(text));
  t.add("--list", "a list", TS_FIELD(list), TextForm::kList);
  t.add("--size", "a size", TS_FIELD(size), TextForm::kSize);
  t.add("--set", "repeated", TS_FIELD(sets));
  t.add("--split", "integers", TS_FIELD(split));
  t.add("--colour", "an enum", TS_FIELD(colour));
  t.add("--colours", "a set of an enum's values", TS_FIELD(colours));
  t.add("--only", "command line only", TS_FIELD(only)).commandLineOnly("a test");
  return t;
}

Fields fromCommandLine(std::vector<std::string> args) {
  Fields f;
  CLI::App app;
  table().addToCommandLine(app, f);
  args.insert(args.begin(), "test");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return f;
}

Fields fromSuite(const std::string& toml) {
  const toml::table step = toml::parse(toml);
  StepReader reader("step.toml", step);
  Fields f;
  table().readFromSuite(reader, f);
  reader.finish();
  return f;
}

void expectSame(const Fields& a, const Fields& b) {
  EXPECT_EQ(a.flag, b.flag);
  EXPECT_EQ(a.check, b.check);
  EXPECT_EQ(a.overlap, b.overlap);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.rate, b.rate);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.list, b.list);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.sets, b.sets);
  EXPECT_EQ(a.split, b.split);
  EXPECT_EQ(a.colour, b.colour);
  EXPECT_EQ(a.colours, b.colours);
}

TEST(OptionTable, TheCommandLineAndASuiteStepSetTheSameFields) {
  const Fields cli = fromCommandLine({"--flag", "--no-check", "--overlap", "off",     "-c",      "4",   "--seed",   "99",
                                      "--rate", "0.25",       "--text",    "b",       "--list",  "p,q", "--size",   "64M",
                                      "--set",  "depth=3",    "--set",     "width=8", "--split", "2,3", "--colour", "green"});
  const Fields suite = fromSuite(
      "flag = true\ncheck = false\noverlap = false\ncount = 4\nseed = 99\nrate = 0.25\ntext = \"b\"\nlist = [\"p\", \"q\"]\nsize "
      "= \"64M\"\n"
      "set = [\"depth=3\", \"width=8\"]\nsplit = [2, 3]\ncolour = \"green\"\n");
  EXPECT_TRUE(cli.flag && !cli.check && !cli.overlap && cli.count == 4 && cli.list == "p,q" && cli.colour == Colour::kGreen);
  expectSame(cli, suite);
  // The suite's other spellings: a ';' string of sets, a comma string of integers, an integer size, an alias.
  expectSame(
      fromSuite("set = \"depth=3;width=8\"\nsplit = \"2,3\"\nsize = 67108864\ncolour = \"verde\"\n"),
      fromCommandLine({"--set", "depth=3", "--set", "width=8", "--split", "2,3", "--size", "67108864", "--colour", "green"}));
}

TEST(OptionTable, NothingSetKeepsTheDefaults) { expectSame(fromCommandLine({}), fromSuite("")); }

TEST(OptionTable, ABadSuiteValueIsOneLineNamingTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"count = 1.5\n", "step.toml:1: 'count' must be an integer"},
      {"count = 3000000000\n", "step.toml:1: 'count': 3000000000 is out of range"},
      {"count = 3000000000\n", "step.toml:1: 'count': 3000000000 is out of range (at most 2147483647)"},
      {"count = -3000000000\n", "step.toml:1: 'count': must be an integer of at least -2147483648, got -3000000000"},
      {"seed = -1\n", "step.toml:1: 'seed': must be a non-negative integer, got -1"},
      {"split = [1, \"x\"]\n", "step.toml:1: 'split' must be an array of integers"},
      {"split = \"1,x\"\n", "step.toml:1: 'split': 'x' is not an integer"},
      {"colour = \"blue\"\n", "step.toml:1: 'colour': unknown 'blue' (expected red or green)"},
      {"rate = nan\n", "step.toml:1: 'rate': nan is not a finite number"},
      {"only = \"x\"\n", "step.toml:1: unknown key 'only'"},
  };
  for (const auto& [toml, message] : cases) {
    SCOPED_TRACE(toml);
    try {
      fromSuite(toml);
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
    }
  }
}

// The command line's words for an integer are the suite's: the field's type bounds it, and a number that is no integer says so.
TEST(OptionTable, TheCommandLineSaysWhatIsWrongWithAnInteger) {
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{"-c", "3000000000"}, "--count: 3000000000 is out of range (at most 2147483647)"},
      {{"-c", "-3000000000"}, "--count: must be an integer of at least -2147483648, got -3000000000"},
      {{"-c", "1e3"}, "--count: must be an integer, got '1e3'"},
      {{"--seed", "-1"}, "--seed: must be a non-negative integer, got -1"},
      {{"--seed", "18446744073709551616"}, "--seed: 18446744073709551616 is out of range (at most 18446744073709551615)"},
      {{"--split", "2,x"}, "--split: must be an integer, got 'x'"},
      {{"--split", "2,3000000000"}, "--split: 3000000000 is out of range (at most 2147483647)"},
  };
  for (const auto& [args, message] : cases) {
    SCOPED_TRACE(args[1]);
    try {
      fromCommandLine(args);
      ADD_FAILURE() << "accepted";
    } catch (const CLI::ParseError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  // Decimal, whatever the leading zeros (CLI11 alone read 010 as octal 8), and a plus sign is a sign.
  EXPECT_EQ(fromCommandLine({"-c", "010"}).count, 10);
  EXPECT_EQ(fromCommandLine({"-c", "+7"}).count, 7);
  EXPECT_EQ(fromCommandLine({"-c", "-2147483648"}).count, -2147483648LL);
}

TEST(OptionTable, TheCommandLineRejectsAnUnknownEnumName) {
  EXPECT_THROW(fromCommandLine({"--colour", "blue"}), CLI::ValidationError);
}

// A list of an enum's values: names or `all` on both sides, held as a set in declaration order, recorded as the names;
// an unknown name is one line naming the choices (links --tests took any text and compared it by hand).
TEST(OptionTable, AnEnumListTakesNamesOrAllOnBothSides) {
  using V = std::vector<Colour>;
  EXPECT_EQ(fromCommandLine({"--colours", "green"}).colours, V{Colour::kGreen});
  EXPECT_EQ(fromCommandLine({"--colours", "green,red"}).colours, (V{Colour::kRed, Colour::kGreen}));
  EXPECT_EQ(fromCommandLine({"--colours", "verde", "--colours", "green"}).colours, V{Colour::kGreen});
  EXPECT_EQ(fromCommandLine({"--colours", "all"}).colours, (V{Colour::kRed, Colour::kGreen}));
  expectSame(fromCommandLine({"--colours", "green"}), fromSuite("colours = \"green\"\n"));
  expectSame(fromCommandLine({"--colours", "green,red"}), fromSuite("colours = [\"green\", \"red\"]\n"));
  expectSame(fromCommandLine({"--colours", "all"}), fromSuite("colours = \"all\"\n"));

  Fields f;
  f.colours = {Colour::kGreen};
  EXPECT_EQ(table().record(f).at("colours"), nlohmann::json::array({"green"}));
  for (const OptionInfo& info : table().describe())
    if (info.key == "colours") {
      EXPECT_EQ(info.value.at("items").at("enum"), nlohmann::json::array({"red", "green"}));
      EXPECT_EQ(info.defaultValue, nlohmann::json::array({"red", "green"}));
    }

  try {
    fromCommandLine({"--colours", "red,blue"});
    ADD_FAILURE() << "accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_EQ(std::string(e.what()), "--colours: 'blue' is not one of red, green, or all");
  }
  try {
    fromSuite("colours = [\"red\", \"blue\"]\n");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "step.toml:1: 'colours': unknown 'blue' (expected all, or a list of red or green)");
  }
}

TEST(OptionTable, SuiteKeysAreTheLongNamesWithUnderscores) {
  EXPECT_EQ(optionKey("-w,--warmup"), "warmup");
  EXPECT_EQ(optionKey("--check,!--no-check"), "check");
  EXPECT_EQ(optionKey("--pp-split"), "pp_split");
  EXPECT_EQ(optionKey("train_args"), "train_args");
}

}  // namespace
}  // namespace ts
