// `trainscope scale`: the option table of a scaling study, its command line and its suite step. Its own
// flags are below; every other flag is a `trainscope train` flag passed to each point's run unchanged (in
// a suite: train_args = "--model mlp --steps 20").
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/choice_errors.h"
#include "bench/commands.h"
#include "bench/failures/agreement.h"
#include "bench/run/run_session.h"
#include "bench/run_flags.h"
#include "bench/scale/scale_options.h"

namespace ts {
namespace {

const OptionTable<ScaleOptions>& scaleOptions() {
  static const OptionTable<ScaleOptions> table = [] {
    OptionTable<ScaleOptions> t;
    const auto self = [](auto& o) -> auto& { return o; };
    t.add("--ranks", "Rank counts, comma-separated; efficiency is against the smallest", TS_FIELD(ranks));
    onUnknownChoice(
        t.add("--mode", "weak: --batch per rank (the global batch grows with the ranks); strong: --batch is the global batch",
              TS_FIELD(mode)),
        expectedChoice<ScaleMode>());
    t.add("--batch", "Batch per rank (weak) or global batch (strong)", TS_FIELD(batch));
    onUnknownChoice(
        t.add("--launcher", "mpirun, srun (inside an allocation), or none (one process: --ranks 1 only)", TS_FIELD(launcher)),
        expectedChoice<LauncherKind>());
    t.add("--launcher-args", "Extra launcher arguments, e.g. \"--oversubscribe\" or \"--hostfile hosts\"",
          TS_FIELD(launcherArgs));
    t.add("--transports",
          "Run every point once per transport, each labelled, its efficiency against its own transport's smallest point "
          "(mpi: shm,tcp; nccl: nvlink,pcie,ib,socket)",
          TS_FIELD(transports), TextForm::kList);
    t.add("--points-dir", "Keep each point's result and log here (default: <json>.points)", TS_FIELD(pointsDir));
    addOutputFlags(t, self);
    addTraceFlag(t, self, "Trace every point: DIR/ranks<N> holds that point's per-rank and merged trace (see train --trace)");
    t.addSuiteOnly(
        "train_args", "The flags of `trainscope train` for every point, as one string",
        [](StepReader& r, ScaleOptions& o) {
          std::stringstream args(r.string("train_args", ""));
          for (std::string a; args >> a;) o.trainArgs.push_back(a);
        },
        "on the command line every flag scale does not know is a train flag",
        [](const ScaleOptions& o) { return nlohmann::json(o.trainArgs); }, {{"type", "array"}, {"items", {{"type", "string"}}}});
    return t;
  }();
  return table;
}

}  // namespace

nlohmann::json toJson(const ScaleOptions& o) { return scaleOptions().record(o); }

namespace {

int runFromCommandLine(ScaleOptions o, const CLI::App& sub, const std::vector<std::string>& argv) {
  o.trainArgs = sub.remaining();
  return runScale(o, argv);
}

// Process 0 runs the study (each point a job of its own); the suite's other processes wait.
SuiteStep readScaleStep(StepReader& r) {
  ScaleOptions o;
  scaleOptions().readFromSuite(r, o);
  validateScale(o);
  SuiteStep s;
  s.config = toJson(o);
  s.run = [o](RunContext& ctx) {
    int failed = 0;
    if (ctx.boot.rank() == 0) {
      ScaleOptions mine = o;
      std::string base = ctx.streamPath;
      if (base.size() > 6 && base.compare(base.size() - 6, 6, ".jsonl") == 0) base.resize(base.size() - 6);
      if (mine.pointsDir.empty() && !base.empty())
        mine.pointsDir = base + "." + (ctx.step.empty() ? "scale" : ctx.step) + ".points";
      failed = runScaleStudy(mine, *ctx.writer, ctx.step);
    }
    if (ctx.boot.size() > 1) ctx.boot.quietBarrier();
    collectively(ctx.boot, [&] {
      if (failed) throw Error(fmt::format("{} scaling point(s) failed (their errors are in the result)", failed));
    });
    return std::size_t{0};
  };
  return s;
}

}  // namespace

Subcommand scaleSubcommand() {
  return {"scale",
          "Train one model at several rank counts (spawning the launcher) and compute weak- or strong-scaling efficiency; other "
          "flags go to "
          "`trainscope train`",
          [](CLI::App& sub) -> Action {
            auto o = std::make_shared<ScaleOptions>();
            sub.allow_extras();
            scaleOptions().addToCommandLine(sub, *o);
            return [o, &sub](const std::vector<std::string>& argv) { return runFromCommandLine(*o, sub, argv); };
          },
          readScaleStep, scaleOptions().describe()};
}

}  // namespace ts
