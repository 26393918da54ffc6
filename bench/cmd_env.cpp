// `trainscope env`: the system inventory, as text, or as a result document with --json. Under mpirun or
// the environment bootstrap, every host of the run is reported.
#include <cstdio>
#include <memory>

#include "bench/commands.h"
#include "bench/inventory.h"
#include "bench/run_session.h"

namespace ts {

Action addEnvCommand(CLI::App& app) {
  auto jsonPath = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("env", "Print the system inventory: CPU, memory, GPUs and their links, NICs, versions");
  sub->add_option("--json", *jsonPath, "Write the inventory as a result document (no records) to this file");
  return [jsonPath](const std::vector<std::string>& argv) {
    auto session = RunSession::open(BootstrapKind::kAuto, false, "env", argv, {{"json", *jsonPath}}, *jsonPath);
    printInventory(session->context());
    session->finish();
    return 0;
  };
}

}  // namespace ts
