// `trainscope env`: the system inventory, as text, or as a result document with --json. Under mpirun or
// the environment bootstrap, every host of the run is reported. In a suite, `kind = "env"` prints it.
#include <cstdio>
#include <memory>

#include "base/terminal_text.h"
#include "bench/commands.h"
#include "bench/inventory/inventory.h"
#include "bench/run/run_session.h"

namespace ts {
namespace {

// The inventory of every host of the run, as text on stdout (process 0): the `env` command and step.
void printInventory(RunContext& ctx) {
  if (ctx.boot.rank() != 0) return;
  const nlohmann::json& meta = *ctx.metadata;
  for (const auto& host : meta["hosts"]) {
    // Host names, model names and environment values as every process read them: text, not terminal commands.
    std::printf("%s", printableLines(formatInventory(host, host["versions"], meta["environment"])).c_str());
    if (meta["hosts"].size() > 1) std::printf("\n");
  }
  std::fflush(stdout);
}

struct EnvArgs {
  std::string jsonPath;
};

const OptionTable<EnvArgs>& envOptions() {
  static const OptionTable<EnvArgs> table = [] {
    OptionTable<EnvArgs> t;
    t.add("--json", "Write the inventory as a result document (no records) to this file", TS_FIELD(jsonPath))
        .commandLineOnly("the suite's result document holds the inventory already")
        .notRecorded("the output path: the record is in the document it names");
    return t;
  }();
  return table;
}

int runEnv(const EnvArgs& a, const std::vector<std::string>& argv) {
  auto session =
      RunSession::open(BootstrapKind::kAuto, false, "env", argv, envOptions().record(a), a.jsonPath, kSessionSetupTimeoutS);
  printInventory(session->context());
  session->finish();
  return 0;
}

SuiteStep readEnvStep(StepReader& r) {
  EnvArgs a;
  envOptions().readFromSuite(r, a);
  SuiteStep s;
  s.config = envOptions().record(a);
  s.run = [](RunContext& ctx) -> std::size_t {
    printInventory(ctx);
    return 0;
  };
  return s;
}

}  // namespace

Subcommand envSubcommand() {
  return {"env", "Print the system inventory: CPU, memory, GPUs and their links, NICs, versions",
          [](CLI::App& sub) { return addTable<EnvArgs>(sub, envOptions(), std::make_shared<EnvArgs>(), runEnv); }, readEnvStep,
          envOptions().describe()};
}

}  // namespace ts
