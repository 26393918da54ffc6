#pragma once
// The subcommands, each registered once: its name, description, option table, how it runs from the command
// line and (for the measuring ones) how a suite step of its kind is read. main.cpp, the help and the suite's
// step kinds all walk subcommands(); the parity test holds each table to "settable from both or says why".
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/option_table.h"
#include "bench/suite/suite.h"
#include "comm/communicator.h"

namespace ts {

// The action a subcommand runs after parsing; returns the exit code.
using Action = std::function<int(const std::vector<std::string>& argv)>;

struct Subcommand {
  std::string name, description;
  // Declares the options on the subcommand's own CLI::App and returns what runs it.
  std::function<Action(CLI::App& sub)> addToCommandLine;
  // Reads a suite [[step]] of this kind into a runnable step; null: not a suite step kind.
  std::function<SuiteStep(StepReader&)> readStep;
  // The option table (empty for the Python tools, whose flags are their own).
  std::vector<OptionInfo> options;
  bool pythonTool = false;  // the Python tool in reports/ runs it (reports_commands.cpp)
};

// The registry (commands.cpp), in the order of the help.
const std::vector<Subcommand>& subcommands();

// One per wing, each in its *_command.cpp.
Subcommand envSubcommand();
Subcommand linksSubcommand();
Subcommand collectivesSubcommand();
Subcommand kernelsSubcommand();
Subcommand trainSubcommand();
Subcommand checkpointSubcommand();  // train/checkpoint_command.cpp: consolidate
Subcommand scaleSubcommand();       // spawns `train` at each rank count
// The backend that the flags of `trainscope train` give its ranks (--device cuda: nccl, cpu: mpi), the flags read as train
// reads them: UsageError "train flags: ..." for one that does not parse (scale checks its points' flags before any runs).
BackendKind trainBackendOf(const std::vector<std::string>& trainFlags);  // train/train_command.cpp
Subcommand suiteSubcommand();
// reports_commands.cpp: the Python tool in reports/ (report, compare, analyze, export, import, accept, history,
// predict).
Subcommand reportSubcommand();
Subcommand compareSubcommand();
Subcommand analyzeSubcommand();
Subcommand exportSubcommand();
Subcommand importSubcommand();
Subcommand acceptSubcommand();
Subcommand historySubcommand();
Subcommand predictSubcommand();

// A subcommand's table on its CLI::App: the options, and the action built by `run` from the filled struct.
template <class Opts>
Action addTable(CLI::App& sub, const OptionTable<Opts>& table, std::shared_ptr<Opts> o,
                std::function<int(const Opts&, const std::vector<std::string>&)> run) {
  table.addToCommandLine(sub, *o);
  return [o, run](const std::vector<std::string>& argv) { return run(*o, argv); };
}

// `resolve` of the arguments a table filled, keeping the table's record of them as given in the options' `given`: the run's
// config (the options' toJson adds what they resolved to), the same from the command line and from a suite.
template <class Args, class Resolve>
auto resolveRecorded(const OptionTable<Args>& table, const Args& a, Resolve resolve) {
  auto o = resolve(a);
  o.given = table.record(a);
  return o;
}

// A suite step of a subcommand whose table fills Args, which `resolve` turns into the options that `run`
// (the runner's step entry) takes; the options' toJson (as given, and what they resolved to) is the step's recorded config.
template <class Args, class Resolve, class Run>
SuiteStep tableStep(StepReader& r, const OptionTable<Args>& table, Resolve resolve, Run run,
                    bool (*wantsMpi)(const decltype(resolve(Args{}))&) = nullptr) {
  Args a;
  table.readFromSuite(r, a);
  const auto o = resolveRecorded(table, a, resolve);
  SuiteStep s;
  s.wantsMpi = wantsMpi && wantsMpi(o);
  s.config = toJson(o);
  s.run = [o, run](RunContext& ctx) -> std::size_t { return run(o, ctx); };
  return s;
}

}  // namespace ts
