// `trainscope report`, `compare`, `analyze`, `export`, `import`, `accept`, `history` and `predict`: the Python tool in reports/,
// started with a python3 that has Debian's matplotlib, jinja2 and jsonschema. Arguments pass through untouched; its exit code is
// ours.
//
// The tool reads files from anywhere (a result mailed by someone else, a shared results folder), so it runs isolated
// (python3 -I): no PYTHON* variable, no user site-packages, and neither the working directory nor a script's folder on
// the import path: `python3 -m reports` put the working directory first, and a `signal.py` beside a result ran as the
// user (issue #34). The package's folder is handed to a one-line starter (kStarter) instead of PYTHONPATH.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/commands.h"
#include "bench/data_home.h"
#include "trainscope/build_info.h"

namespace ts {
namespace {
namespace fs = std::filesystem;

// Where the `reports` package lives (bench/data_home.h).
std::string reportsHome() {
  if (const auto home = dataHome()) return home->string();
  throw UsageError(
      fmt::format("cannot find the reports tool: set TRAINSCOPE_HOME to the directory that holds reports/ (looked in {})",
                  dataHomeCandidates()));
}

// Puts the folder given as the first argument first on the import path and runs the package `reports` as `-m` would.
constexpr const char* kStarter =
    "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); runpy.run_module('reports', run_name='__main__', alter_sys=True)";

// The first python3 that has what the tool needs (Debian's /usr/bin/python3 before a pyenv one), asked as the tool
// will run (isolated) and from `/`. It asks whether the modules are there (find_spec) rather than importing them:
// importing matplotlib took 0.2 s of every reports command, most of them never plotting; a module that is there but
// fails to import is the tool's one error line.
std::string pythonWithModules() {
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    const std::string probe = fmt::format(
        "cd / && {} -I -c 'import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in (\"matplotlib\", "
        "\"jinja2\", \"jsonschema\")))' >/dev/null 2>&1",
        py);
    if (std::system(probe.c_str()) == 0) return py;
  }
  throw UsageError(
      "the reports need a python3 with matplotlib, jinja2 and jsonschema (Debian: python3-matplotlib python3-jinja2 "
      "python3-jsonschema)");
}

// Everything after the subcommand's name goes to the tool's command `name`.
Action toolAction(CLI::App& sub, const std::string& name) {
  sub.prefix_command();  // everything after the subcommand is the tool's
  sub.set_help_flag();   // so is --help
  return [&sub, name](const std::vector<std::string>&) -> int {
    // Absolute: the tool changes folder for a moment (reports/html/plots.py), and a relative import path would then name another.
    const std::string home = fs::absolute(reportsHome()).string();
    const std::string python = pythonWithModules();
    std::vector<std::string> args = {python, "-I", "-c", kStarter, home, name};
    for (const auto& a : sub.remaining()) args.push_back(a);
    // What `import` writes as the run's tool, as every trainscope result names the build that wrote it.
    ::setenv("TRAINSCOPE_VERSION", build::kVersion, 1);
    ::setenv("TRAINSCOPE_GIT_COMMIT", build::kGitCommit, 1);
    // This binary, for a command that runs it (`predict search` makes each candidate layout's plan with `train --plan`).
    std::error_code ec;
    const fs::path self = fs::canonical("/proc/self/exe", ec);
    if (!ec) ::setenv("TRAINSCOPE_BIN", self.c_str(), 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    throw Error(fmt::format("cannot start {}: {}", python, std::strerror(errno)));
  };
}

// The subcommand that hands its arguments to the tool's `name` command.
Subcommand pythonTool(const std::string& name, const std::string& help) {
  return {name, help, [name](CLI::App& app) { return toolAction(app, name); }, nullptr, {}, true};
}

}  // namespace

Subcommand reportSubcommand() {
  return pythonTool("report", "Write an HTML report (and PNGs, summary.md) of result documents: report RESULT... -o DIR");
}

Subcommand analyzeSubcommand() {
  return pythonTool("analyze",
                    "Where each step of a --trace run (or a PyTorch profiler trace) went, per rank (compute, exposed "
                    "communication, idle), stragglers, pipeline bubbles: analyze TRACE_DIR...");
}

Subcommand exportSubcommand() {
  return pythonTool(
      "export",
      "Write result documents as CSV (a row per record) or OpenMetrics text for Prometheus: export RESULT... --format "
      "csv|openmetrics [-o FILE]");
}

Subcommand importSubcommand() {
  return pythonTool("import",
                    "Read nccl-tests (text or -J JSON) or OSU collective tests' output into a result document, for compare and "
                    "report: import FILE... [--json OUT.json] [--from nccl-tests|osu] [--label L] [--ranks N (OSU)]");
}

Subcommand acceptSubcommand() {
  return pythonTool("accept",
                    "Node acceptance: PASS/FAIL per host against a rules file (thresholds per metric): accept RESULT... "
                    "[--rules FILE] [--junit FILE] (exit 0 all pass, 1 a host fails, 2 bad input)");
}

Subcommand compareSubcommand() {
  return pythonTool("compare",
                    "Compare a candidate result with a baseline, with an interval per record: compare BASELINE CANDIDATE (exit 0 "
                    "pass, 1 regression, 2 bad input, 3 inconclusive)");
}

Subcommand historySubcommand() {
  return pythonTool("history",
                    "Every run kept in a database (SQLite file, or PostgreSQL): each record's series across commits, the "
                    "commit that changed it (exit 1 when the newest commits start a regression), trend pages: history "
                    "COMMAND ... (its commands: trainscope history --help)");
}

Subcommand predictSubcommand() {
  return pythonTool("predict",
                    "Predict collective times at untried sizes and group sizes from this cluster's own collectives results "
                    "(alpha-beta fits, with a band): predict collectives --calibration RESULT... --op OP --bytes N[,N...] "
                    "--ranks P; their error on held-out measured points: predict check --calibration RESULT...; a layout's step "
                    "from its plan: predict train --calibration RESULT... --plan PLAN; the best layouts for N ranks: "
                    "predict search --calibration RESULT... --ranks N -- TRAIN_FLAGS");
}

}  // namespace ts
