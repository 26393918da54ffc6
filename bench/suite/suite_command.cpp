// `trainscope suite FILE`: every step of a suite file in one run, one result document, optionally one report.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "base/error.h"
#include "base/terminal_text.h"
#include "base/user_paths.h"
#include "bench/commands.h"
#include "bench/data_home.h"
#include "bench/inventory/inventory.h"
#include "bench/run/run_metadata.h"
#include "bench/run/run_session.h"
#include "bench/suite/suite.h"

namespace ts {
namespace {

struct SuiteArgs {
  std::string file, jsonPath, reportDir;
  bool checkOnly = false;
};

// Runs `trainscope report` (this very binary, whatever PATH or argv[0] say) on the finished document and
// waits for it; its failure does not undo the run.
int writeReport(const std::string& self, const std::string& json, const std::string& dir) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(self.c_str(), self.c_str(), "report", json.c_str(), "-o", dir.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// The suite's own flags: a suite step of kind "suite" would be a suite in a suite, so there is no table to share.
Action addSuiteOptions(CLI::App& app) {
  auto args = std::make_shared<SuiteArgs>();
  CLI::App* sub = &app;
  sub->add_option("file", args->file, "The suite file, or the name of a shipped suite (quick, ci, cluster)")->required();
  sub->add_option("--json", args->jsonPath, "The result document (default: results/<suite>-<host>-<UTC time>.json)");
  sub->add_option("--report", args->reportDir, "Also write the HTML report of the run into this directory");
  sub->add_flag("--check-only", args->checkOnly, "Check the suite file and list its steps; run nothing");
  return [args](const std::vector<std::string>& argv) -> int {
    args->file = resolveSuite(args->file);
    // Every step of the whole file checked before anything runs, the run's as --check-only's: each kind's step reader
    // makes the checks its subcommand makes before it starts (paths, data, values: train's checkTrainRun).
    const Suite suite = loadSuite(args->file);
    if (!args->reportDir.empty()) checkOutputDirectory("--report", args->reportDir);
    if (args->checkOnly) {
      if (launcherRank() == 0) {
        // The names are the file's, printed as text (base/terminal_text.h); the record keeps them as given.
        std::printf("suite %s (%s): %zu steps, all valid\n", printable(suite.name).c_str(), printable(args->file).c_str(),
                    suite.steps.size());
        for (const auto& s : suite.steps) std::printf("  line %d: %s (%s)\n", s.line, printable(s.name).c_str(), s.kind.c_str());
      }
      return 0;
    }
    std::string json = args->jsonPath;
    if (json.empty()) {
      std::string stamp = isoTimeNow().substr(0, 19);  // 2026-11-22T04:30:58 -> 20261122T043058Z
      stamp.erase(std::remove_if(stamp.begin(), stamp.end(), [](char c) { return c == '-' || c == ':'; }), stamp.end());
      // The suite's name and the host's are input: each is one file-name component, never a path.
      json = fmt::format("results/{}-{}-{}Z.json", safeFileComponent(suite.name), safeFileComponent(hostName()), stamp);
    }
    bool wantMpi = false;
    for (const auto& s : suite.steps) wantMpi = wantMpi || s.wantsMpi;
    auto session = RunSession::open(BootstrapKind::kAuto, wantMpi, "suite", argv, suite.config(), json, kSessionSetupTimeoutS);
    std::size_t failed = 0;
    for (std::size_t i = 0; i < suite.steps.size(); ++i) {
      const SuiteStep& step = suite.steps[i];
      if (session->boot().rank() == 0) {
        std::printf("#\n# ===== suite %s: step %zu/%zu: %s (%s, line %d)\n", printable(suite.name).c_str(), i + 1,
                    suite.steps.size(), printable(step.name).c_str(), step.kind.c_str(), step.line);
        std::fflush(stdout);
      }
      session->context().step = step.name;
      failed += step.run(session->context());
    }
    session->finish();
    int rc = failed ? 1 : 0;
    if (!args->reportDir.empty() && session->boot().rank() == 0) {
      if (writeReport("/proc/self/exe", json, args->reportDir) != 0) {
        std::fprintf(stderr, "trainscope: error: the report of %s could not be written (the results are kept)\n",
                     printable(json).c_str());
        rc = rc ? rc : 1;
      }
    }
    return rc;
  };
}

}  // namespace

Subcommand suiteSubcommand() {
  return {"suite", "Run the steps of a suite file (bench/suites/*.toml) into one result document", addSuiteOptions, nullptr, {}};
}

}  // namespace ts
