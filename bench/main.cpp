// trainscope: benchmarks and profiles multi-GPU training. This file only dispatches to the subcommands
// and turns every failure into one line on stderr and an exit code (2: bad input, 1: a failure, 3: timeout).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/error.h"
#include "base/stop_request.h"
#include "base/terminal_text.h"
#include "bench/commands.h"
#include "bench/failures/activity.h"
#include "bench/failures/agreement.h"
#include "bench/failures/run_ending.h"
#include "bench/help_format.h"
#include "bench/parse_errors.h"
#include "comm/bootstrap.h"
#include "trainscope/build_info.h"

namespace {

// Only one process of a multi-process run prints errors that all processes share.
bool printsSharedErrors() { return ts::launcherRank() == 0; }

// Every error line is one line whatever it echoes (a file name, a key, a peer's line): control bytes as \xNN.
void printError(const std::string& what) {
  std::fprintf(stderr, "trainscope: error: %s\n", ts::printable(what).c_str());
  std::fflush(stderr);
}

// An error every process shares is said by process 0 alone; the launcher stops the run when the first
// process exits non-zero, so the others wait a moment before exiting with it. Otherwise, on a loaded
// machine, another process exits first and process 0 is stopped before its line is out (seen: a bad
// --pp-split said nothing but mpirun's "1 process returned a non-zero exit code").
int sharedErrorExit(int code) {
  if (!printsSharedErrors()) std::this_thread::sleep_for(std::chrono::seconds(2));
  return code;
}

// A run of several processes with lifelines ends here, agreed: process 0 says the one line (its own failure's, or the
// peer's that explains the run's) and ends every process (bench/failures/run_ending.h); does not return then.
void endRun(ts::ending::FailureKind kind, const std::string& line, int exitCode) { ts::ending::endRun({kind, line, exitCode}); }

using Actions = std::vector<std::pair<std::string, ts::Action>>;

// The command line: every subcommand of the registry, each with the action that runs it.
Actions addSubcommands(CLI::App& app) {
  app.set_version_flag("--version", fmt::format("trainscope {} ({}), built with: {}", ts::build::kVersion, ts::build::kGitCommit,
                                                ts::build::kFeatures));
  app.require_subcommand(1);
  app.formatter(ts::helpFormatter());  // before the subcommands, which inherit it
  Actions actions;
  for (const ts::Subcommand& command : ts::subcommands())
    actions.emplace_back(command.name, command.addToCommandLine(*app.add_subcommand(command.name, command.description)));
  return actions;
}

// Parses the command line; the exit code where the run ends here (help, the version, a command line that does not
// parse), else nothing.
std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv, const std::vector<std::string>& args) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    ts::activity::errorReported();
    if (printsSharedErrors()) printError(fmt::format("{} (see trainscope --help)", ts::parseErrorLine(app, e, args)));
    return sharedErrorExit(2);
  }
  return std::nullopt;
}

// Every process failed the same way and is exiting: one line, from the first process. A process that
// exits first makes the launcher stop the rest, which must then not add a "stopped by signal" line.
int agreedErrorExit(const ts::AgreedError& e) {
  ts::activity::errorReported();
  if (printsSharedErrors()) printError(e.what());
  return sharedErrorExit(e.usage() ? 2 : 1);
}

// Bad input found once the processes have met may be this process's alone (a --memory-limit reached on one
// rank): with lifelines, process 0 says it once, whichever processes found it (run_ending.h).
int usageErrorExit(const ts::UsageError& e) {
  endRun(ts::ending::FailureKind::kError,
         printsSharedErrors() ? std::string(e.what()) : fmt::format("{}: {}", ts::activity::who(), e.what()), 2);
  ts::activity::errorReported();
  if (printsSharedErrors()) printError(e.what());
  return sharedErrorExit(2);
}

// Process 0: a peer failed and said why (or died): the run ends with that line.
[[noreturn]] void peerFailedExit(const ts::PeerFailed& e) {
  endRun(ts::ending::FailureKind::kPeer, e.what(), e.exitCode());
  ts::activity::errorReported();
  printError(e.what());
  std::quick_exit(e.exitCode());
}

[[noreturn]] void stoppedExit(const ts::StoppedBySignal& e) {
  endRun(ts::ending::FailureKind::kStopped, fmt::format("{}: {}", ts::activity::who(), e.what()), 128 + e.signal());
  // The launcher ends the run, and this process was only waiting for the others: process 0 says so once.
  ts::activity::errorReported();
  if (!dynamic_cast<const ts::StoppedWhileWaiting*>(&e))
    printError(fmt::format("{}: {}", ts::activity::who(), e.what()));
  else if (printsSharedErrors())
    printError(fmt::format("{}: {} (the launcher is ending the run: did another rank fail?)", ts::activity::who(), e.what()));
  std::quick_exit(1);
}

// A failure on this process only: say where, and end the others, which may be waiting for it.
[[noreturn]] void localFailureExit(const std::string& what) {
  endRun(ts::ending::FailureKind::kError, fmt::format("{}: {}", ts::activity::who(), what), 1);
  ts::activity::errorReported();
  printError(fmt::format("{}: {}", ts::activity::who(), what));
  std::quick_exit(1);
}

// Runs the subcommand given; every failure ends as one line and an exit code (the functions above).
int runSubcommand(CLI::App& app, Actions& actions, const std::vector<std::string>& args) {
  try {
    for (auto& [name, action] : actions)
      if (app.got_subcommand(name)) return action(args);
    return 2;
  } catch (const ts::AgreedError& e) {
    return agreedErrorExit(e);
  } catch (const ts::LocalUsageError& e) {
    ts::activity::errorReported();
    printError(e.what());
    return 2;
  } catch (const ts::UsageError& e) {
    return usageErrorExit(e);
  } catch (const ts::PeerFailed& e) {
    peerFailedExit(e);
  } catch (const ts::StoppedBySignal& e) {
    stoppedExit(e);
  } catch (const ts::Error& e) {
    localFailureExit(e.what());
  } catch (const std::exception& e) {
    localFailureExit(fmt::format("internal error: {}", e.what()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  CLI::App app{"trainscope: benchmarks and profiles multi-GPU training (links, collectives, kernels, training)", "trainscope"};
  Actions actions = addSubcommands(app);
  if (const std::optional<int> exitCode = parseCommandLine(app, argc, argv, args)) return *exitCode;
  // The README's commands are checked against the parser this way (tests/integration/test_readme_commands.py).
  if (std::getenv("TRAINSCOPE_PARSE_ONLY")) return 0;
  return runSubcommand(app, actions, args);
}
