// `trainscope scale`: the command line of a scaling study. Its own flags are below; every other flag is a
// `trainscope train` flag and is passed to each point's run unchanged.
#include <memory>

#include "bench/commands.h"
#include "bench/scale_options.h"

namespace ts {

Action addScaleCommand(CLI::App& app) {
  auto o = std::make_shared<ScaleOptions>();
  CLI::App* sub = app.add_subcommand("scale", "Train one model at several rank counts (spawning the launcher) and compute weak- or strong-scaling efficiency; "
                                              "other flags go to `trainscope train`");
  sub->allow_extras();
  sub->add_option("--ranks", o->ranks, "Rank counts, comma-separated; efficiency is against the smallest")->delimiter(',')->capture_default_str();
  sub->add_option("--mode", o->mode, "weak: --batch per rank (the global batch grows with the ranks); strong: --batch is the global batch")
      ->check(CLI::IsMember({"weak", "strong"}))
      ->capture_default_str();
  sub->add_option("--batch", o->batch, "Batch per rank (weak) or global batch (strong)")->capture_default_str();
  sub->add_option("--launcher", o->launcher, "mpirun, srun (inside an allocation), or none (one process: --ranks 1 only)")
      ->check(CLI::IsMember({"mpirun", "srun", "none"}))
      ->capture_default_str();
  sub->add_option("--launcher-args", o->launcherArgs, "Extra launcher arguments, e.g. \"--oversubscribe\" or \"--hostfile hosts\"");
  sub->add_option("--points-dir", o->pointsDir, "Keep each point's result and log here (default: <json>.points)");
  sub->add_option("--json", o->jsonPath, "Write the result document here; records stream to the .jsonl beside it");
  sub->add_option("--label", o->label, "A label for this study");
  sub->add_option("--trace", o->traceDir, "Trace every point: DIR/ranks<N> holds that point's per-rank and merged trace (see train --trace)");
  return [o, sub](const std::vector<std::string>& argv) {
    o->trainArgs = sub->remaining();
    return runScale(*o, argv);
  };
}

}  // namespace ts
