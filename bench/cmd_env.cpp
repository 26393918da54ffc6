// `trainscope env`: the system inventory, as text, or as a result document with --json. Under mpirun or
// the environment bootstrap, every host of the run is reported.
#include <cstdio>
#include <memory>

#include "bench/commands.h"
#include "bench/inventory.h"
#include "bench/result_writer.h"
#include "bench/run_metadata.h"
#include "comm/bootstrap.h"

namespace ts {

Action addEnvCommand(CLI::App& app) {
  auto jsonPath = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("env", "Print the system inventory: CPU, memory, GPUs and their links, NICs, versions");
  sub->add_option("--json", *jsonPath, "Write the inventory as a result document (no records) to this file");
  return [jsonPath](const std::vector<std::string>& argv) {
    auto boot = makeBootstrap(BootstrapKind::kAuto, false);
    const nlohmann::json meta = makeRunMetadata(*boot, "env", argv, {{"json", *jsonPath}}, {{"size", boot->size()}}, nlohmann::json::array());
    if (boot->rank() != 0) return 0;
    for (const auto& host : meta["hosts"]) {
      std::printf("%s", formatInventory(host, host["versions"], meta["environment"]).c_str());
      if (meta["hosts"].size() > 1) std::printf("\n");
    }
    if (!jsonPath->empty()) {
      ResultWriter writer(*jsonPath);
      nlohmann::json finalMeta = meta;
      finalMeta["ended_at"] = isoTimeNow();
      writer.begin(meta);
      writer.finish(finalMeta);
      std::printf("# inventory written to %s\n", jsonPath->c_str());
    }
    return 0;
  };
}

}  // namespace ts
