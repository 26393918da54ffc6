// The step kinds a suite can run: the one place where each layer registers its step.
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/collectives_options.h"
#include "bench/kernels_options.h"
#include "bench/links_options.h"
#include "bench/run_session.h"
#include "bench/suite.h"
#include "bench/train_options.h"
#include "bench/scale_options.h"
#include "bench/agreement.h"

namespace ts {
namespace {

SuiteStep parseEnvStep(StepReader&) {
  SuiteStep s;
  s.run = [](RunContext& ctx) -> std::size_t {
    printInventory(ctx);
    return 0;
  };
  return s;
}

// The same options as `trainscope collectives`, under their long names with dashes as underscores.
SuiteStep parseCollectivesStep(StepReader& r) {
  CollectivesArgs a;
  a.backend = r.string("backend", a.backend);
  a.opts.gpusPerProcess = static_cast<int>(r.integer("gpus_per_process", a.opts.gpusPerProcess));
  a.ops = r.list("ops", a.ops);
  a.minBytes = r.size("min_bytes", a.minBytes);
  a.maxBytes = r.size("max_bytes", a.maxBytes);
  a.opts.stepFactor = r.number("step_factor", a.opts.stepFactor);
  a.stepBytes = r.size("step_bytes", a.stepBytes);
  a.dtype = r.list("dtype", a.dtype);
  a.redop = r.list("redop", a.redop);
  a.opts.root = static_cast<int>(r.integer("root", a.opts.root));
  a.opts.warmup = static_cast<int>(r.integer("warmup", a.opts.warmup));
  a.opts.iters = static_cast<int>(r.integer("iters", a.opts.iters));
  a.opts.trials = static_cast<int>(r.integer("trials", a.opts.trials));
  a.placement = r.string("placement", a.placement);
  a.opts.graph = static_cast<int>(r.integer("graph", a.opts.graph));
  a.opts.check = r.boolean("check", a.opts.check);
  a.opts.timeoutS = r.number("timeout", a.opts.timeoutS);
  a.opts.label = r.string("label", a.opts.label);
  a.opts.traceDir = r.string("trace", a.opts.traceDir);
  CollectivesOptions o = resolveCollectivesArgs(a);
  o.backend = resolveBackend(o.backend);
  SuiteStep s;
  s.wantsMpi = o.backend == BackendKind::kMpi;
  s.config = toJson(o);
  s.run = [o](RunContext& ctx) { return runCollectivesStep(o, ctx); };
  return s;
}

// The same options as `trainscope links`.
SuiteStep parseLinksStep(StepReader& r) {
  LinksArgs a;
  a.tests = r.list("tests", a.tests);
  a.memoryBytes = r.size("memory_bytes", a.memoryBytes);
  a.opts.threads = static_cast<int>(r.integer("threads", a.opts.threads));
  a.latencyBytes = r.size("latency_bytes", a.latencyBytes);
  a.bandwidthBytes = r.size("bandwidth_bytes", a.bandwidthBytes);
  a.opts.window = static_cast<int>(r.integer("window", a.opts.window));
  a.copyBytes = r.size("copy_bytes", a.copyBytes);
  a.opts.warmup = static_cast<int>(r.integer("warmup", a.opts.warmup));
  a.opts.iters = static_cast<int>(r.integer("iters", a.opts.iters));
  a.opts.latencyIters = static_cast<int>(r.integer("latency_iters", a.opts.latencyIters));
  a.opts.pairs = r.string("pairs", a.opts.pairs);
  a.opts.outlierFraction = r.number("outlier_fraction", a.opts.outlierFraction);
  a.opts.timeoutS = r.number("timeout", a.opts.timeoutS);
  a.opts.label = r.string("label", a.opts.label);
  const LinksOptions o = resolveLinksArgs(a);
  SuiteStep s;
  s.wantsMpi = o.mpi && launchedByMpi();
  s.config = toJson(o);
  s.run = [o](RunContext& ctx) { return runLinksStep(o, ctx); };
  return s;
}

// The same options as `trainscope kernels`.
SuiteStep parseKernelsStep(StepReader& r) {
  KernelsArgs a;
  a.ops = r.list("ops", a.ops);
  a.dtype = r.string("dtype", a.dtype);
  a.preset = r.string("preset", a.preset);
  a.shapesFile = r.string("shapes", a.shapesFile);
  a.backend = r.string("backend", a.backend);
  a.convAlgo = r.string("conv_algo", a.convAlgo);
  a.convLayout = r.string("conv_layout", a.convLayout);
  a.hidden = r.integer("hidden", a.hidden);
  a.seq = r.integer("seq", a.seq);
  a.batch = r.integer("batch", a.batch);
  a.vocab = r.integer("vocab", a.vocab);
  a.opts.warmup = static_cast<int>(r.integer("warmup", a.opts.warmup));
  a.opts.iters = static_cast<int>(r.integer("iters", a.opts.iters));
  a.opts.trials = static_cast<int>(r.integer("trials", a.opts.trials));
  a.opts.ceilings = r.boolean("ceilings", a.opts.ceilings);
  a.opts.timeoutS = r.number("timeout", a.opts.timeoutS);
  a.opts.label = r.string("label", a.opts.label);
  a.opts.traceDir = r.string("trace", a.opts.traceDir);
  const KernelsOptions o = resolveKernelsArgs(a);
  SuiteStep s;
  s.config = toJson(o);
  s.run = [o](RunContext& ctx) { return runKernelsStep(o, ctx); };
  return s;
}

// The same options as `trainscope train`; model fields as `set = "key=value;key=value"`.
SuiteStep parseTrainStep(StepReader& r) {
  TrainRunOptions o;
  wl::TrainOptions& t = o.train;
  t.model = r.string("model", t.model);
  t.preset = r.string("preset", t.preset);
  std::stringstream sets(r.string("set", ""));
  for (std::string kv; std::getline(sets, kv, ';');)
    if (!kv.empty()) t.overrides.push_back(kv);
  t.steps = r.integer("steps", t.steps);
  t.batch = r.integer("batch", t.batch);
  t.microBatches = r.integer("micro_batches", t.microBatches);
  t.precision = r.string("precision", t.precision);
  t.optimizer.kind = r.string("optimizer", t.optimizer.kind);
  t.optimizer.weightDecay = r.number("weight_decay", t.optimizer.weightDecay);
  t.schedule.lr = r.number("lr", t.schedule.lr);
  t.schedule.kind = r.string("schedule", t.schedule.kind);
  t.schedule.warmup = r.integer("lr_warmup", t.schedule.warmup);
  t.clipNorm = r.number("clip_norm", t.clipNorm);
  t.seed = static_cast<std::uint64_t>(r.integer("seed", static_cast<std::int64_t>(t.seed)));
  t.data = r.string("data", t.data);
  o.warmupSteps = r.integer("warmup_steps", o.warmupSteps);
  o.ceiling = r.boolean("ceiling", o.ceiling);
  o.timeoutS = r.number("timeout", o.timeoutS);
  o.label = r.string("label", o.label);
  o.traceDir = r.string("trace", o.traceDir);
  t.device = r.string("device", t.device);
  wl::LayoutOptions& l = t.layout;
  l.dp = static_cast<int>(r.integer("dp", l.dp));
  l.tp = static_cast<int>(r.integer("tp", l.tp));
  l.pp = static_cast<int>(r.integer("pp", l.pp));
  l.zero = static_cast<int>(r.integer("zero", l.zero));
  l.sync = r.string("sync", l.sync);
  l.psShards = static_cast<int>(r.integer("ps_shards", l.psShards));
  l.bucketMb = r.number("bucket_mb", l.bucketMb);
  l.overlap = r.boolean("overlap", l.overlap);
  l.schedule = r.string("pp_schedule", l.schedule);
  wl::validateTrainOptions(t);
  if (o.warmupSteps < 0 || o.warmupSteps >= t.steps) throw UsageError(fmt::format("warmup_steps {} must be in [0, steps {})", o.warmupSteps, t.steps));
  SuiteStep s;
  s.config = toJson(o);
  s.run = [o](RunContext& ctx) {
    runTrainStep(o, ctx);
    return std::size_t{0};
  };
  return s;
}

// The same options as `trainscope scale`: ranks = "1,2", mode, batch, launcher, launcher_args, and the
// train flags as one string, train_args = "--model mlp --steps 20". Process 0 runs the study (each point
// a job of its own); the suite's other processes wait.
SuiteStep parseScaleStep(StepReader& r) {
  ScaleOptions o;
  o.ranks.clear();
  std::stringstream ranks(r.list("ranks", "1,2"));
  for (std::string n; std::getline(ranks, n, ',');) {
    try {
      o.ranks.push_back(std::stoi(n));
    } catch (const std::exception&) {
      throw UsageError(fmt::format("ranks: '{}' is not a rank count", n));
    }
  }
  o.mode = r.string("mode", o.mode);
  o.batch = r.integer("batch", o.batch);
  o.launcher = r.string("launcher", o.launcher);
  o.launcherArgs = r.string("launcher_args", o.launcherArgs);
  o.pointsDir = r.string("points_dir", o.pointsDir);
  o.label = r.string("label", o.label);
  o.traceDir = r.string("trace", o.traceDir);
  std::stringstream args(r.string("train_args", ""));
  for (std::string a; args >> a;) o.trainArgs.push_back(a);
  validateScale(o);
  SuiteStep s;
  s.config = {{"ranks", o.ranks}, {"mode", o.mode}, {"batch", o.batch}, {"launcher", o.launcher}, {"launcher_args", o.launcherArgs}, {"train_args", o.trainArgs}};
  s.run = [o](RunContext& ctx) {
    int failed = 0;
    if (ctx.boot.rank() == 0) {
      ScaleOptions mine = o;
      std::string base = ctx.streamPath;
      if (base.size() > 6 && base.compare(base.size() - 6, 6, ".jsonl") == 0) base.resize(base.size() - 6);
      if (mine.pointsDir.empty() && !base.empty()) mine.pointsDir = base + "." + (ctx.step.empty() ? "scale" : ctx.step) + ".points";
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

const std::vector<StepType>& stepTypes() {
  static const std::vector<StepType> types = {
      {"env", parseEnvStep},
      {"links", parseLinksStep},
      {"kernels", parseKernelsStep},
      {"train", parseTrainStep},
      {"scale", parseScaleStep},
      {"collectives", parseCollectivesStep},
  };
  return types;
}

}  // namespace ts
