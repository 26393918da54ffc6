#pragma once
// One function per subcommand: registers its options on the command line and returns what runs it.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ts {

// The action a subcommand runs after parsing; returns the exit code.
using Action = std::function<int(const std::vector<std::string>& argv)>;

Action addEnvCommand(CLI::App& app);
Action addCollectivesCommand(CLI::App& app);
Action addLinksCommand(CLI::App& app);
Action addKernelsCommand(CLI::App& app);
Action addReportCommand(CLI::App& app);   // cmd_reports.cpp: the Python tool in reports/
Action addCompareCommand(CLI::App& app);
Action addAnalyzeCommand(CLI::App& app);  // cmd_reports.cpp: reports/analyze.py on a --trace directory
Action addSuiteCommand(CLI::App& app);
Action addTrainCommand(CLI::App& app);
Action addScaleCommand(CLI::App& app);  // cmd_scale.cpp: spawns `train` at each rank count

// After the commands are added: every real-valued option of `app` and its subcommands rejects NaN and
// the infinities at parse time ("--timeout: nan is not a finite number"), before anything runs.
void requireFiniteNumbers(CLI::App& app);  // finite_options.cpp

}  // namespace ts
