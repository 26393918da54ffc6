// Every option whose value is a closed choice (an enum its table declares) takes each of its names and answers any
// other value with one line naming the option and every choice, on the command line and in a suite step. The options
// are read from the registry, so a choice declared later is walked too. Collectives' --backend, --bootstrap, --placement
// and --mpi-reduce-scatter were text that the runner's own string compares resolved after parsing (issue #37): their
// lines, suite keys and record below.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "bench/commands.h"
#include "bench/step_reader.h"
#include "tests/unit/command_lines.h"

namespace ts {
namespace {

using test::CommandLine;
using test::commandNamed;
using test::suiteError;
using test::tableCommands;

constexpr const char* kNoChoice = "no-such-choice";

void expectNamesEveryChoice(const std::string& error, const std::vector<std::string>& choices) {
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  EXPECT_NE(error.find(kNoChoice), std::string::npos) << error;
  for (const std::string& choice : choices) EXPECT_NE(error.find(choice), std::string::npos) << choice << ": " << error;
}

TEST(EnumOptions, EveryChoiceOptionTakesItsNamesAndNamesThemForAnythingElse) {
  int walked = 0;
  for (const Subcommand* command : tableCommands())
    for (const OptionInfo& option : command->options) {
      if (!option.value.contains("enum")) continue;
      const std::vector<std::string> choices = option.value.at("enum").get<std::vector<std::string>>();
      SCOPED_TRACE(command->name + " " + option.names);
      ++walked;
      if (option.scope != OptionScope::kSuiteOnly) {
        const std::string name = option.names.substr(option.names.rfind(',') + 1);
        const std::string error = CommandLine(*command).parse(command->name, name, kNoChoice);
        EXPECT_EQ(error.rfind("--", 0), 0u) << "the option first: " << error;
        expectNamesEveryChoice(error, choices);
        for (const std::string& choice : choices)
          EXPECT_EQ(CommandLine(*command).parse(command->name, name, choice), "") << choice;
      }
      if (command->readStep && option.scope != OptionScope::kCommandLineOnly) {
        const std::string error = suiteError(*command, fmt::format("{} = \"{}\"", option.key, kNoChoice));
        EXPECT_EQ(error.rfind(fmt::format("s.toml:1: '{}': ", option.key), 0), 0u) << error;
        expectNamesEveryChoice(error, choices);
      }
    }
  // train's model, optimizer, schedule, sync ...; kernels' backend and precision; collectives' backend, bootstrap,
  // placement and mpi_reduce_scatter: at least these.
  EXPECT_GE(walked, 10);
}

TEST(EnumOptions, CollectivesClosedChoicesAreTheirOptionsOwnLine) {
  const Subcommand& collectives = commandNamed("collectives");
  const auto parsed = [&](const std::string& name, const std::string& value) {
    return CommandLine(collectives).parse("collectives", name, value);
  };
  EXPECT_EQ(parsed("--backend", "gloo"), "--backend: 'gloo' is not auto, mpi or nccl");
  EXPECT_EQ(parsed("--bootstrap", "ssh"), "--bootstrap: 'ssh' is not auto, mpi, env or single");
  EXPECT_EQ(parsed("--placement", "sideways"), "--placement: 'sideways' is not both, out or in");
  EXPECT_EQ(parsed("--mpi-reduce-scatter", "ring"), "--mpi-reduce-scatter: 'ring' is not block, counts or both");
  EXPECT_EQ(parsed("--issue", "sometimes"), "--issue: 'sometimes' is not blocking, nonblocking or both");
  EXPECT_EQ(parsed("--cache", "warm"), "--cache: 'warm' is not hot, cold or both");
  EXPECT_EQ(suiteError(collectives, "backend = \"gloo\""), "s.toml:1: 'backend': unknown 'gloo' (expected auto, mpi or nccl)");
  EXPECT_EQ(suiteError(collectives, "placement = \"sideways\""),
            "s.toml:1: 'placement': unknown 'sideways' (expected both, out or in)");
  EXPECT_EQ(suiteError(collectives, "mpi_reduce_scatter = \"ring\""),
            "s.toml:1: 'mpi_reduce_scatter': unknown 'ring' (expected block, counts or both)");
}

// The record's config holds each choice under its suite key by the name it was given, as when these were text; what
// it resolved to is beside it.
TEST(EnumOptions, CollectivesRecordTheirChoicesByName) {
  const toml::table table =
      toml::parse("backend = \"mpi\"\nplacement = \"out\"\nmpi_reduce_scatter = \"both\"\nissue = \"nonblocking\"");
  StepReader reader("s.toml", table);
  const nlohmann::json config = commandNamed("collectives").readStep(reader).config;
  EXPECT_EQ(config.at("backend"), "mpi");
  EXPECT_EQ(config.at("placement"), "out");
  EXPECT_EQ(config.at("mpi_reduce_scatter"), "both");
  const nlohmann::json& resolved = config.at("resolved");
  EXPECT_EQ(resolved.at("out_of_place"), true);
  EXPECT_EQ(resolved.at("in_place"), false);
  EXPECT_EQ(resolved.at("mpi_reduce_scatter"), nlohmann::json({"block", "counts"}));
  EXPECT_EQ(config.at("issue"), "nonblocking");
  EXPECT_EQ(resolved.at("issue"), nlohmann::json({"nonblocking"}));
}

}  // namespace
}  // namespace ts
