// The step kinds a suite can run: the one place where each layer registers its step.
#include "bench/collectives_options.h"
#include "bench/run_session.h"
#include "bench/suite.h"

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
  CollectivesOptions o = resolveCollectivesArgs(a);
  o.backend = resolveBackend(o.backend);
  SuiteStep s;
  s.wantsMpi = o.backend == BackendKind::kMpi;
  s.config = toJson(o);
  s.run = [o](RunContext& ctx) { return runCollectivesStep(o, ctx); };
  return s;
}

}  // namespace

const std::vector<StepType>& stepTypes() {
  static const std::vector<StepType> types = {
      {"env", parseEnvStep},
      {"collectives", parseCollectivesStep},
  };
  return types;
}

}  // namespace ts
