#pragma once
// The unit tests' view of the subcommands as a user reaches them: a subcommand's options on a command line of its own
// (as main adds them), and a suite step of it, each answering with the error line it gives.
#include <toml++/toml.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/error.h"
#include "bench/commands.h"
#include "bench/step_reader.h"

namespace ts::test {

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

// The subcommands declared by an option table.
inline std::vector<const Subcommand*> tableCommands() {
  std::vector<const Subcommand*> out;
  for (const Subcommand& c : subcommands())
    if (!c.options.empty()) out.push_back(&c);
  return out;
}

inline const Subcommand& commandNamed(const std::string& name) {
  for (const Subcommand* c : tableCommands())
    if (c->name == name) return *c;
  throw std::logic_error("no subcommand " + name);
}

// The UsageError a suite step of `command` with `toml` gives ("" when it is taken).
inline std::string suiteError(const Subcommand& command, const std::string& toml) {
  const toml::table step = toml::parse(toml);
  StepReader reader("s.toml", step);
  try {
    command.readStep(reader);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace ts::test
