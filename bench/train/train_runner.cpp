// `trainscope train`: builds the trainer, trains, prints a line every few steps, and writes one `train`
// record: step time and phase statistics over the timed steps, throughput, achieved TFLOP/s and MFU
// against the GEMM ceiling it measured and the datasheet peak (bench/train/train_mfu.h), peak memory, and the
// loss curve.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "bench/session/activity.h"
#include "bench/session/agreement.h"
#include "bench/kernels/ceilings.h"
#include "bench/session/compute_clock.h"
#include "bench/train/compute_peaks.h"
#include "bench/session/fault_injection.h"
#include "bench/session/progress.h"
#include "bench/session/result_writer.h"
#include "bench/session/run_session.h"
#include "bench/session/stats.h"
#include "bench/session/trace_files.h"
#include "bench/train/train_breakdown.h"
#include "bench/train/train_mfu.h"
#include "bench/train/train_options.h"
#include "bench/session/watchdog.h"
#include "comm/bootstrap.h"
#include "comm/communicator.h"

namespace ts {
namespace {

// The first step's logits (of its last micro-batch, computed with the weights before the step's update),
// which samples they are, and the step's loss.
void dumpLogits(const std::string& path, wl::Trainer& trainer, const wl::StepResult& r) {
  const wl::Tensor& logits = trainer.model().logits();
  const std::vector<float> host = logits.toHost();
  const std::size_t cols = static_cast<std::size_t>(logits.shape.back()), rows = logits.numel() / cols;
  nlohmann::json rowsJson = nlohmann::json::array();
  for (std::size_t i = 0; i < rows; ++i) rowsJson.push_back(std::vector<float>(host.begin() + i * cols, host.begin() + (i + 1) * cols));
  const nlohmann::json doc = {{"step", r.step}, {"loss", trainer.lastMicroBatchLoss()}, {"sample_indices", trainer.lastSampleIndices()}, {"logits", rowsJson}};
  writeFileAtomically(path, doc.dump());
}

// Every parameter's squared L2 norm (float64 sums) and size, from the parameters this rank trains.
nlohmann::json parameterSquares(const std::vector<wl::Param*>& params) {
  nlohmann::json out = nlohmann::json::object();
  for (wl::Param* p : params) {
    double sq = 0;
    for (float v : p->value.toHost()) sq += double(v) * double(v);
    out[p->name] = {sq, p->value.numel(), p->tpShard};
  }
  return out;
}

// The L2 norm of every parameter after training, over the whole model: a fingerprint of the weights, so
// that two runs (another layout, another machine) can be compared without their checkpoints. Pipeline
// stages each know their own parameters, tensor-parallel ranks their slices (summed); data-parallel
// replicas are equal, and the first of each group speaks. Collective when world > 1. Also the count.
std::pair<nlohmann::json, std::int64_t> parameterNorms(Bootstrap& boot, const wl::Mesh& mesh, const std::vector<wl::Param*>& params) {
  nlohmann::json mine = mesh.coordinate(wl::GroupKind::kDp) == 0 ? parameterSquares(params) : nlohmann::json::object();
  std::vector<std::string> all = {mine.dump()};
  if (mesh.worldSize() > 1) all = boot.allGatherStrings(mine.dump());
  std::map<std::string, std::pair<double, std::int64_t>> total;
  for (const auto& s : all) {
    const nlohmann::json rank = nlohmann::json::parse(s);
    for (const auto& [name, v] : rank.items()) {
      auto& [sq, n] = total[name];
      if (v[2].get<bool>() || n == 0) {  // slices add up; a replicated tensor counts once
        sq += v[0].get<double>();
        n += v[1].get<std::int64_t>();
      }
    }
  }
  nlohmann::json norms = nlohmann::json::object();
  std::int64_t count = 0;
  for (const auto& [name, v] : total) {
    norms[name] = std::sqrt(v.first);
    count += v.second;
  }
  return {norms, count};
}

// The record's MFU block: against the ceiling this run measured (when it did) and, for a GPU the table
// knows, the datasheet peak in the run's precision at the SM clock read now.
nlohmann::json mfuFor(wl::Trainer& trainer, const std::string& precision, Precision gemmPrecision, const std::optional<CeilingSet>& ceilings,
                      double perDevice) {
  const nlohmann::json clock = computeClockMhz(trainer.device().ordinal());  // the SM clock on a GPU, the CPU frequency where known
  std::optional<MeasuredPeak> measured;
  if (ceilings && ceilings->computeTflops() > 0)
    measured = MeasuredPeak{ceilings->computeTflops(), std::string(precisionName(gemmPrecision)), ceilings->computeSource(), ceilings->computeClockMhz(),
                            ceilings->computeRechecked(), ceilings->likelyCause(CeilingKind::kCompute, MemoryLevel::kDram)};
  std::optional<DatasheetPeak> datasheet;
  if (trainer.device().cuda())
    if (const auto p = datasheetPeak(trainer.device().name(), parsePrecision(precision))) datasheet = DatasheetPeak{*p, precision};
  return mfuBlock(perDevice, measured, datasheet, clock);
}

}  // namespace

nlohmann::json toJson(const TrainRunOptions& o) {
  nlohmann::json j = o.train.toJson();
  j["warmup_steps"] = o.warmupSteps;
  j["ceiling"] = o.ceiling;
  j["timeout_s"] = o.timeoutS;
  j["trace"] = o.traceDir;
  return j;
}

namespace {

// Every rank trains its part of the layout; process 0 prints and writes the record.
void trainOnMesh(const TrainRunOptions& o, RunContext& ctx, const wl::Mesh& mesh) {
  if (o.warmupSteps < 0) throw UsageError("--warmup-steps must be >= 0");
  if (!o.dumpLogits.empty() && mesh.size(wl::GroupKind::kPp) > 1) throw UsageError("--dump-logits with --pp: the logits are on the last stage; dump them from a run without --pp");
  const bool leader = ctx.boot.rank() == 0;
  Watchdog watchdog(o.timeoutS, endAllRanksOnTimeout(o.timeoutS, ctx.boot));  // the train record comes at the end
  WatchdogScope guard(watchdog);
  activity::set("building the model and loading the data");
  std::unique_ptr<wl::Trainer> built;
  collectively(ctx.boot, [&] { built = std::make_unique<wl::Trainer>(o.train, &mesh, o.timeoutS); });
  wl::Trainer& trainer = *built;
  const std::int64_t todo = o.train.steps - trainer.firstStep();
  if (o.warmupSteps >= todo)
    throw UsageError(fmt::format("--warmup-steps {} leaves none of the {} steps to time: train more steps or warm up fewer", o.warmupSteps, todo));
  wl::Model& model = trainer.model();
  const auto& cfg = model.config();
  const int world = mesh.worldSize();
  if (leader) {
    std::printf("# train %s %s on %s in %s: %lld parameters, %.3g GFLOP per step (3x forward), %lld %s per step, batch %lld in %lld micro-batch(es), data %s\n",
                cfg.kind.c_str(), cfg.preset.c_str(), trainer.device().name().c_str(), o.train.precision.c_str(), static_cast<long long>(model.parameterCount()),
                trainer.flopsPerStep() / 1e9, static_cast<long long>(trainer.itemsPerStep()), model.itemName().c_str(), static_cast<long long>(o.train.batch),
                static_cast<long long>(o.train.microBatches), trainer.dataInfo().name.c_str());
    if (world > 1)
      std::printf("# layout %s over %d ranks: %lld %s per rank per micro-batch; this rank updates %zu of %lld parameters\n", mesh.layout().name().c_str(), world,
                  static_cast<long long>(trainer.microBatchSize()), model.itemName() == "tokens" ? "sequences" : "samples", trainer.ownedParameterElements(),
                  static_cast<long long>(model.parameterCount()));
    if (trainer.firstStep() > 0) std::printf("# resumed at step %lld from %s\n", static_cast<long long>(trainer.firstStep()), o.train.checkpointDir.c_str());
  }
  std::optional<Fault> fault;
  collectively(ctx.boot, [&] { fault = faultFromEnvironment(); });
  // The GEMM ceiling MFU is against, in the precision the run's GEMMs take: the run's on a GPU, float32 on
  // the CPU (which rounds 16-bit formats around float32 GEMMs).
  const Precision gemmPrecision = trainer.device().cuda() ? parsePrecision(o.train.precision) : Precision::kFloat32;
  std::optional<CeilingSet> ceilings;
  if (o.ceiling && leader) {
    ceilings.emplace(trainer.device().cuda() ? cudaGemmCeilingSpecs(gemmPrecision, trainer.device().ordinal()) : cpuGemmCeilingSpecs(),
                     CeilingOptions{ctx.writer, ctx.step, plantedCeilingScale(fault, ctx.boot.rank()), !trainer.device().cuda()});
    std::printf("%s\n", ceilings->consoleLine().c_str());
  }
  if (world > 1) ctx.boot.quietBarrier();  // the ceiling is measured on process 0 alone
  std::fflush(stdout);

  const std::int64_t logEvery = o.logEvery > 0 ? o.logEvery : std::max<std::int64_t>(1, todo / 20);
  if (leader)
    std::printf("# %8s %12s %10s %10s %10s %10s %10s %10s %10s %12s\n", "step", "loss", "lr", "grad_norm", "data(ms)", "fwd(ms)", "bwd(ms)", "sync(ms)",
                "opt(ms)", (model.itemName() + "/s").c_str());
  nlohmann::json curve = nlohmann::json::array();
  RankSteps timed;
  double initialLoss = NAN, finalLoss = NAN;
  std::string failure;
  std::exception_ptr failed;
  std::int64_t skipped = 0;
  double checkpointS = 0;
  Progress progress("train", static_cast<double>(todo), leader);
  std::unique_ptr<TraceFiles> traceFiles;
  if (!o.traceDir.empty()) traceFiles = std::make_unique<TraceFiles>(ctx.boot, o.traceDir, world);
  // A launcher ending the run (another rank died) asks this rank to stop: the waits notice, the steps
  // measured so far go into the record below, then the process exits.
  activity::setGracefulStop(world > 1);
  if (world > 1) ctx.boot.barrier();  // the origin every rank's collective launches are measured from
  timed.originS = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  try {
    for (std::int64_t i = 0; !trainer.done(); ++i) {
      activity::set(fmt::format("train step {}", trainer.nextStep()));
      if (const int sig = stopRequested()) throw Error(fmt::format("stopped by signal {} before train step {}", sig, trainer.nextStep()));
      // A delay without :step= fires every step (a straggler); the others fire once, at their step (or step 0).
      const bool due = fault && (fault->step == trainer.nextStep() || (fault->step < 0 && (fault->kind == Fault::Kind::kDelay || trainer.nextStep() == 0)));
      if (due && fault->rank == mesh.rank() && fault->inOperation()) {
        if (fault->kind == Fault::Kind::kDie) std::fprintf(stderr, "trainscope: planted fault: %s dies at the start of train step %lld\n", activity::who().c_str(), fault->step);
        std::fflush(stderr);
        injectInOperation(*fault);
      }
      progress.step(fmt::format("step {}", trainer.nextStep()));
      const wl::StepResult r = trainer.step();
      heartbeat::beat();
      if (std::isnan(initialLoss)) {
        initialLoss = r.loss;
        if (!o.dumpLogits.empty() && leader) dumpLogits(o.dumpLogits, trainer, r);
      }
      finalLoss = r.loss;
      nlohmann::json point = {{"step", r.step}, {"loss", r.loss}, {"lr", r.lr}, {"grad_norm", r.skipped ? nlohmann::json() : nlohmann::json(r.gradNorm)}};
      if (o.train.precision == "float16") {
        point["loss_scale"] = r.lossScale;
        point["skipped"] = r.skipped;
        skipped += r.skipped;
      }
      curve.push_back(point);
      checkpointS += r.checkpointS;
      if (i >= o.warmupSteps) timed.add(r);
      if (leader && (r.step % logEvery == 0 || trainer.done())) {
        progress.done();
        std::printf("  %8lld %12.5f %10.3g %10.4g%s %10.3f %10.3f %10.3f %10.3f %10.3f %12.1f\n", static_cast<long long>(r.step), r.loss, r.lr, r.gradNorm,
                    r.skipped ? " (overflow: skipped)" : "", r.dataS * 1e3, r.forwardS * 1e3, r.backwardS * 1e3, r.syncS * 1e3, r.optimizerS * 1e3,
                    double(trainer.itemsPerStep()) / r.totalS);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    failure = e.what();
    failed = std::current_exception();
    // Another rank cannot finish the step this one left: keep what was measured here (process 0) and
    // end the run from the caller (main ends every process).
  }
  progress.done();
  activity::setGracefulStop(false);
  activity::set(failure.empty() ? "gathering the ranks' step times" : "");

  if (traceFiles && failure.empty()) {
    // This rank's place: the mesh, and per axis its size and this rank's coordinate ("pp", "pp_rank").
    nlohmann::json about = {{"mesh", mesh.toJson()}, {"micro_batches", o.train.microBatches}};
    for (const wl::MeshAxis& a : mesh.axes()) {
      about[std::string(a.name)] = a.size;
      about[wl::coordinateField(a)] = a.coordinate;
    }
    traceFiles->finish(fmt::format("train {} {} {}", cfg.kind, cfg.preset, mesh.layout().name()), about);
  }
  TrainBreakdown breakdown;
  std::pair<nlohmann::json, std::int64_t> norms = {nlohmann::json::object(), model.parameterCount()};
  if (failure.empty()) {
    trainer.gatherParameters();  // ZeRO-3: the weights, for the record's parameter norms
    norms = parameterNorms(ctx.boot, mesh, trainer.trainedParams());
    breakdown = gatherBreakdown(ctx.boot, mesh, timed);
  } else {
    breakdown.stepSeconds = timed.total;  // this rank's own view: the others are not reachable
  }
  // An MFU above 100% of the measured ceiling is impossible: process 0 measures the ceiling once more,
  // the other ranks waiting without spinning (where they still answer: not after a failure).
  const double perDevice = breakdown.stepSeconds.empty() ? 0 : trainer.flopsPerStep() / summarize(breakdown.stepSeconds).median / 1e12 / world;
  bool recheck = ceilings && ceilings->computeTflops() > 0 && perDevice > ceilings->computeTflops();
  if (world > 1 && failure.empty()) recheck = ctx.boot.sum(recheck ? 1 : 0) > 0;
  if (recheck) {
    if (ceilings) ceilings->recheck(CeilingKind::kCompute, MemoryLevel::kDram, "MFU");
    if (world > 1 && failure.empty()) ctx.boot.quietBarrier();
  }
  if (!leader) {
    if (failed) std::rethrow_exception(failed);
    return;
  }
  nlohmann::json rec = {{"kind", "train"},
                        {"model", cfg.kind},
                        {"preset", cfg.preset},
                        {"backend", trainer.device().cuda() ? "cuda" : "cpu"},
                        {"device", trainer.device().name()},
                        {"precision", o.train.precision},
                        {"world_size", world},
                        {"layout", mesh.layout().toJson()},
                        {"mesh", mesh.toJson()},
                        {"config", trainer.resolvedConfig()},
                        {"parameters", model.parameterCount()},
                        {"owned_parameters", trainer.ownedParameterElements()},
                        {"flops_per_step", trainer.flopsPerStep()},
                        {"items_per_step", trainer.itemsPerStep()},
                        {"item", model.itemName()},
                        {"first_step", trainer.firstStep()},
                        {"steps_done", static_cast<std::int64_t>(curve.size())},
                        {"warmup_steps", o.warmupSteps},
                        {"timed_steps", static_cast<std::int64_t>(breakdown.stepSeconds.size())},
                        {"completed", failure.empty()},
                        {"peak_memory_bytes", model.memoryBytes()},
                        {"checkpoint_time_s", checkpointS},
                        {"loss", {{"initial", initialLoss}, {"final", finalLoss}}},
                        {"loss_curve", curve}};
  if (failure.empty()) rec["parameter_norms"] = norms.first;
  else if (world == 1) rec["parameter_norms"] = parameterNorms(ctx.boot, mesh, trainer.trainedParams()).first;
  rec["parameters"] = failure.empty() ? norms.second : model.parameterCount();  // the whole model's
  if (const wl::Pipeline* p = trainer.pipeline()) {
    const double m = static_cast<double>(o.train.microBatches), stages = static_cast<double>(p->stages().size());
    nlohmann::json split = nlohmann::json::array();
    for (const auto& r : p->stages()) split.push_back({r.from, r.to});
    rec["pipeline"] = {{"stages", p->stages().size()},
                       {"microbatches", o.train.microBatches},
                       {"schedule", mesh.layout().schedule},
                       {"layers", split},
                       {"theoretical_bubble", (stages - 1) / (m + stages - 1)},
                       {"measured_bubble", breakdown.fields.contains("measured_bubble") ? breakdown.fields["measured_bubble"] : nlohmann::json()}};
    breakdown.fields.erase("measured_bubble");
    std::string cuts;
    for (const auto& r : p->stages()) cuts += fmt::format(" [{},{})", r.from, r.to);
    const nlohmann::json& measured = rec["pipeline"]["measured_bubble"];
    std::printf("# pipeline: %zu stages, layers%s, %lld micro-batches, %s: bubble %s measured, %.1f%% theoretical\n", p->stages().size(), cuts.c_str(),
                static_cast<long long>(o.train.microBatches), mesh.layout().schedule.c_str(),
                measured.is_null() ? "n/a" : fmt::format("{:.1f}%", 100 * measured.get<double>()).c_str(), 100 * (stages - 1) / (m + stages - 1));
  }
  if (!failure.empty()) rec["error"] = failure;
  if (o.train.precision == "float16") rec["skipped_steps"] = skipped;
  const std::vector<double>& total = breakdown.stepSeconds;
  if (!total.empty()) {
    const double median = summarize(total).median;
    const double tflops = trainer.flopsPerStep() / median / 1e12;
    rec["step_time_us"] = usStats(total);
    nlohmann::json samples = nlohmann::json::array();
    for (double t : total) samples.push_back(t * 1e6);
    rec["step_samples_us"] = samples;
    if (failure.empty()) rec.update(breakdown.fields);
    else
      rec["phases_us"] = {{"data", usStats(timed.data)}, {"forward", usStats(timed.forward)}, {"backward", usStats(timed.backward)},
                          {"sync", usStats(timed.sync)}, {"optimizer", usStats(timed.optimizer)}};
    rec["throughput_per_s"] = double(trainer.itemsPerStep()) / median;
    rec["tflops"] = tflops;
    rec["tflops_per_device"] = perDevice;
    rec["mfu"] = mfuFor(trainer, o.train.precision, gemmPrecision, ceilings, perDevice);
    std::printf("# step %.3f ms median over %zu timed steps%s: %.1f %s/s, %.4f TFLOP/s; peak memory %.1f MiB; loss %.4f -> %.4f\n", median * 1e3,
                total.size(), world > 1 ? " (slowest rank)" : "", double(trainer.itemsPerStep()) / median, model.itemName().c_str(), tflops,
                double(model.memoryBytes()) / (1 << 20), initialLoss, finalLoss);
    if (const std::string line = mfuConsoleLine(rec["mfu"]); !line.empty()) std::printf("%s\n", line.c_str());
    if (const std::string warning = suspectWarning(mfuSuspects(rec["mfu"])); !warning.empty()) std::printf("%s\n", warning.c_str());
    if (world > 1 && failure.empty()) {
      const auto& c = breakdown.fields["communication"];
      std::printf("# communication %.3f ms per step, exposed %.3f ms (overlap %s), rank spread %.1f%%\n", c["communication_us"]["median"].get<double>() / 1e3,
                  c["exposed_us"]["median"].get<double>() / 1e3,
                  c["overlap"].is_null() ? "n/a" : fmt::format("{:.0f}%", 100 * c["overlap"].get<double>()).c_str(), 100 * c["rank_spread"].get<double>());
      const auto& s = breakdown.fields["stragglers"];
      std::string late;
      for (const auto& r : s["ranks"])
        if (r["late"].get<bool>()) late += fmt::format("{}rank {} ({:.3f} ms median arrival skew)", late.empty() ? "" : ", ", r["rank"].get<int>(),
                                                       r["median_skew_us"].get<double>() / 1e3);
      std::printf("# stragglers: %s\n", late.empty() ? fmt::format("none (no rank consistently late by more than {:g} ms)", s["threshold_ms"].get<double>()).c_str()
                                                     : late.c_str());
    }
  }
  if (!o.label.empty()) rec["label"] = o.label;
  if (!ctx.step.empty()) rec["step"] = ctx.step;
  if (ctx.writer) ctx.writer->add(rec);
  if (failed) {
    ctx.keepTelemetry();  // the unwinding may block on a rank that is gone
    std::rethrow_exception(failed);
  }
}

}  // namespace

void runTrainStep(const TrainRunOptions& given, RunContext& ctx) {
  Bootstrap& boot = ctx.boot;
  TrainRunOptions o = given;
  if (o.train.device == "cuda" && boot.size() > 1) o.train.device = fmt::format("cuda:{}", boot.localRank());  // one GPU per process
  const wl::LayoutOptions layout = wl::resolveLayout(o.train.layout, boot.size());
  std::unique_ptr<Communicator> world;
  if (boot.size() > 1) {
    CommunicatorOptions co;
    co.backend = o.train.device.rfind("cuda", 0) == 0 ? BackendKind::kNccl : BackendKind::kMpi;
    collectively(boot, [&] { world = makeCommunicator(co, boot); });
    ctx.addLayout(ctx.step.empty() ? "train" : ctx.step, world->backend(), world->worldSize(), 1, nlohmann::json::array({{{"rank", world->rank(0)}, {"device", world->device(0)}}}));
  }
  std::unique_ptr<wl::Mesh> mesh;
  collectively(boot, [&] { mesh = std::make_unique<wl::Mesh>(layout, world.get()); });
  trainOnMesh(o, ctx, *mesh);
}

int runTrain(const TrainRunOptions& o, const std::vector<std::string>& argv) {
  auto session = RunSession::open(BootstrapKind::kAuto, launchedByMpi(), "train", argv, toJson(o), o.jsonPath);
  try {
    runTrainStep(o, session->context());
  } catch (const std::exception&) {
    // The steps trained before a failure stay in the result; an error before any record leaves no file.
    const ResultWriter* w = session->context().writer;
    if (w && !w->records().empty()) session->finish();
    throw;
  }
  session->finish();
  return 0;
}

}  // namespace ts
