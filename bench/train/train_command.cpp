// `trainscope train`: the option table of a training run, its command line and its suite step.
#include <memory>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/choice_errors.h"
#include "bench/commands.h"
#include "bench/parse_errors.h"
#include "bench/run_flags.h"
#include "bench/train/train_options.h"
#include "bench/train/train_plan.h"

namespace ts {
namespace {

// Why these options are no part of a train record's identity (the others are: OptionDecl::notInIdentity).
constexpr const char* kBetweenSteps = "evaluations run between the steps, outside their times, and change no parameter";
constexpr const char* kWhenItStops = "when the run stops: each step it trains is the same";
constexpr const char* kMlperfLog = "what the MLPerf log says of the run";

// The model, its steps and batches, the device and the precision.
void addModelOptions(OptionTable<TrainRunOptions>& t) {
  onUnknownChoice(t.add("--model", "mlp, cnn or transformer", TS_FIELD(train.model)), unknownChoice<wl::ModelKind>("model"));
  t.add("--preset",
        "Named size: mlp tiny|small|base; cnn tiny|resnet20|resnet18|resnet34; transformer "
        "tiny|small|gpt2|gpt2-medium|moe-tiny|moe-small",
        TS_FIELD(train.preset));
  t.add("--set",
        "Override a model field, key=value (depth, width, activation; widths, blocks, stem; layers, hidden, heads, seq_len, "
        "vocab, experts, top_k); in a suite an array, or one string of key=value;key=value",
        TS_FIELD(train.overrides));
  t.add("--capacity-factor",
        "Mixture of experts: each expert takes at most ceil(X tokens k / E) of a micro-batch's assignments, the rest "
        "dropped (first choices first, in token order); 0 = no limit",
        TS_FIELD(train.capacityFactor))
      .range({0, 1e6});
  t.add("--aux-loss-coef", "Mixture of experts: the load-balancing loss's coefficient (coef E sum_e f_e P_e; 0 = none)",
        TS_FIELD(train.auxLossCoef))
      .range({0, 1e6});
  t.add("--steps", "Optimizer steps", TS_FIELD(train.steps)).range({1, kMaxCount});
  t.add("--batch", "Global batch per step (samples, or sequences for the transformer)", TS_FIELD(train.batch))
      .range({1, kMaxCount});
  t.add("--micro-batches", "Gradient accumulation: micro-batches per step (must divide --batch)", TS_FIELD(train.microBatches))
      .range({1, kMaxCount});
  // --dtype: kernels' word for the same choice (one vocabulary across subcommands; the suite key stays precision).
  t.add("--device", "cpu, cuda (GPU 0) or cuda:N", TS_FIELD(device))
      .notInIdentity("which device of its kind: where it ran, as the host is (the record's backend says cpu or cuda)");
  onUnknownChoice(
      t.add("--precision,--dtype",
            "float32; tf32 (CUDA); bfloat16 / float16 (or bf16, fp16): mixed precision with float32 master weights (16-bit "
            "rounding emulated)",
            TS_FIELD(train.precision)),
      UnknownChoice<Precision>{[](const std::string& flag, const std::string& value) {
        return fmt::format("{} {}: expected float32, tf32 (CUDA), bfloat16 or float16", flag, value);
      }});
  t.add("--loss-scale", "float16: the initial dynamic loss scale", TS_FIELD(train.lossScale)).range({0, 1e30, true});
  t.add("--loss-scale-interval", "float16: good steps before the loss scale doubles", TS_FIELD(train.lossScaleInterval));
}

// The optimizer, the learning-rate schedule and the gradient clipping.
void addOptimizerOptions(OptionTable<TrainRunOptions>& t) {
  onUnknownChoice(t.add("--optimizer", "sgd, adam, adamw, rmsprop or lamb", TS_FIELD(train.optimizer.kind)),
                  unknownChoice<wl::OptimizerKind>("optimizer"));
  t.add("--lr", "Peak learning rate", TS_FIELD(train.schedule.lr)).range({0, 1e6, true});
  onUnknownChoice(
      t.add("--schedule",
            "constant, step, cosine, linear (the two after --lr-warmup) or cyclic (triangular, half cycle --lr-step-size)",
            TS_FIELD(train.schedule.kind)),
      unknownChoice<wl::ScheduleKind>("schedule"));
  t.add("--lr-warmup", "Linear learning-rate warm-up steps (cosine, linear)", TS_FIELD(train.schedule.warmup));
  t.add("--min-lr", "Learning rate at the end of a cosine or linear decay", TS_FIELD(train.schedule.minLr)).range({0, 1e6});
  t.add("--lr-step-size", "Steps between decays (step schedule); half a cycle (cyclic)", TS_FIELD(train.schedule.stepSize));
  t.add("--lr-gamma", "Decay factor (step schedule)", TS_FIELD(train.schedule.gamma)).range({0, 1, true});
  onUnknownChoice(t.add("--lr-scaling",
                        "Scale --lr and --min-lr by the global batch over --base-batch: none, linear or sqrt (large-batch rules)",
                        TS_FIELD(train.schedule.scaling)),
                  expectedChoice<wl::LrScaling>());
  t.add("--base-batch", "--lr-scaling: the global batch the given --lr is for", TS_FIELD(train.schedule.baseBatch));
  t.add("--weight-decay", "Weight decay (weights only, not biases or norms)", TS_FIELD(train.optimizer.weightDecay))
      .range({0, 1});
  t.add("--momentum", "SGD momentum", TS_FIELD(train.optimizer.momentum)).range({0, 1, false, true});
  t.add("--beta1", "Adam/AdamW/LAMB beta1", TS_FIELD(train.optimizer.beta1)).range({0, 1, false, true});
  t.add("--beta2", "Adam/AdamW/LAMB beta2", TS_FIELD(train.optimizer.beta2)).range({0, 1, false, true});
  t.add("--clip-norm", "Clip the global gradient norm to this (0 = off)", TS_FIELD(train.clipNorm)).range({0, 1e12});
}

// The data, its order and augmentation, and dropout.
void addDataOptions(OptionTable<TrainRunOptions>& t) {
  t.add("--seed", "Seed of the initial weights and the data order", TS_FIELD(train.seed))
      .notInIdentity("another draw of the same work: runs of other seeds are samples of one measurement");
  t.add("--data", "synthetic, mnist:DIR, cifar10:DIR or text:FILE", TS_FIELD(train.data));
  onUnknownChoice(t.add("--augment",
                        "Training images' augmentation: none, or crop-flip (pad 4, random crop, random horizontal flip; "
                        "seeded by sample position, the same in every layout)",
                        TS_FIELD(train.augment)),
                  expectedChoice<data::Augment>());
  t.add("--dropout",
        "Dropout probability (0 = none): mlp after each hidden activation, cnn before the head, transformer on the "
        "embeddings and each block's attention and MLP outputs; masks keyed by sample and feature, the same in every layout",
        TS_FIELD(train.dropout))
      .range({0, 1, false, true});
  t.add("--synthetic-size", "Samples per epoch of synthetic data (its held-out split is the next tenth of that)",
        TS_FIELD(train.syntheticSize))
      .range({1, double(std::int64_t{1} << 40)});
}

// Evaluation on the held-out split and time to a target (MLPerf's measure).
void addEvalOptions(OptionTable<TrainRunOptions>& t) {
  t.group("Evaluation");
  t.add("--eval-every", "Evaluate on the held-out split every N steps and after the last (0 = never)", TS_FIELD(train.evalEvery))
      .notInIdentity(kBetweenSteps);
  t.add("--eval-batches", "Batches per evaluation, each the global batch of one micro-batch (0 = the whole held-out split)",
        TS_FIELD(train.evalBatches))
      .notInIdentity(kBetweenSteps);
  t.add("--target-accuracy", "Stop once an evaluation's top-1 accuracy reaches this fraction (time to target)",
        TS_FIELD(train.targetAccuracy))
      .range({0, 1})
      .notInIdentity(kWhenItStops);
  t.add("--target-loss", "Stop once an evaluation's loss is at or below this (time to target)", TS_FIELD(train.targetLoss))
      .range({0, 1e6})
      .notInIdentity(kWhenItStops);
  t.add("--mllog", "Write an MLPerf :::MLLOG log of the run (init, blocks, evaluations, run_stop) to FILE", TS_FIELD(mllogPath))
      .notInIdentity(kMlperfLog);
  t.add("--mllog-org", "The --mllog log's submission_org: the submitting organization (not given: no such line)",
        TS_FIELD(mllogSubmission.org))
      .notInIdentity(kMlperfLog);
  t.add("--mllog-platform", "The --mllog log's submission_platform: the system's name (not given: no such line)",
        TS_FIELD(mllogSubmission.platform))
      .notInIdentity(kMlperfLog);
  onUnknownChoice(t.add("--mllog-division",
                        "The --mllog log's submission_division: none (no such line), closed or open (MLPerf's divisions, "
                        "whose rules its checker then applies)",
                        TS_FIELD(mllogSubmission.division)),
                  expectedChoice<MlperfDivision>())
      .notInIdentity(kMlperfLog);
  t.add("--mllog-caches-cleared",
        "The page cache was dropped before this run (by its launcher, as MLPerf asks): the --mllog log's cache_clear is true "
        "(without it false: trainscope does not drop it)",
        TS_FIELD(mllogSubmission.cachesCleared))
      .notInIdentity(kMlperfLog);
}

// How the model is laid out over the processes.
void addLayoutOptions(OptionTable<TrainRunOptions>& t) {
  t.group("Layout over the processes");
  t.add("--dp", "Data-parallel ranks (0 = the processes left by --tp, --pp and --ep)", TS_FIELD(train.layout.dp));
  t.add("--tp", "Tensor-parallel ranks", TS_FIELD(train.layout.tp));
  t.add("--pp", "Pipeline stages", TS_FIELD(train.layout.pp));
  t.add("--ep",
        "Expert-parallel ranks: each holds 1/N of every mixture's experts, tokens exchanged by all-to-alls (carved out of "
        "the data-parallel ranks; a mixture-of-experts model)",
        TS_FIELD(train.layout.ep));
  t.add("--zero",
        "ZeRO stage over the data-parallel group: 0 (all-reduce), 1 (optimizer state sharded), 2 (gradients too), 3 (parameters "
        "too)",
        TS_FIELD(train.layout.zero));
  onUnknownChoice(
      t.add("--sync",
            "How data-parallel ranks combine their work: allreduce, ps (parameter servers), ps-async (parameter servers without "
            "a barrier: each step at most --staleness updates behind) or average (each steps on its own gradients, the "
            "parameters averaged every --average-every steps)",
            TS_FIELD(train.layout.sync)),
      expectedChoice<wl::SyncKind>());
  t.add("--ps-shards", "--sync ps, ps-async: parameter shards, served by data-parallel ranks 0..N-1",
        TS_FIELD(train.layout.psShards));
  t.add("--ps-servers", "--sync ps-async: dedicated server processes (the last N ranks, which do not train; 0: workers serve)",
        TS_FIELD(train.layout.psServers));
  t.add("--staleness", "--sync ps-async: how many updates behind a worker's step may be (0: the synchronous parameter server)",
        TS_FIELD(train.layout.staleness));
  t.add("--average-every", "--sync average: optimizer steps between two averagings of the parameters (local SGD)",
        TS_FIELD(train.layout.averageEvery));
  t.add("--average-optimizer", "--sync average: average the optimizer state with the parameters",
        TS_FIELD(train.layout.averageOptimizer));
  t.add("--bucket-mb", "Gradient bucket size in MiB", TS_FIELD(train.layout.bucketMb)).range({0, 1 << 20, true});  // 1 TiB
  t.addOnOff("--overlap", "on: send each bucket as soon as its gradients are ready (during the backward); off: after it",
             TS_FIELD(train.layout.overlap));
  t.add("--prefetch",
        "--zero 3: layers whose all-gather is issued ahead while the current one computes, forward and backward (0: each "
        "layer gathered when it runs)",
        TS_FIELD(train.layout.prefetch))
      .range({0, 64});
  onUnknownChoice(t.add("--sync-bn",
                        "Batch norm's statistics over the whole data-parallel batch (SyncBatchNorm): auto (on for the cnn "
                        "under --dp on the CPU), on or off (each rank's own batch)",
                        TS_FIELD(train.layout.syncBn)),
                  expectedChoice<wl::SyncBatchNorm>());
  onUnknownChoice(t.add("--pp-schedule", "Pipeline schedule: gpipe or 1f1b", TS_FIELD(train.layout.schedule)),
                  expectedChoice<wl::PipelineSchedule>());
  t.add("--pp-split", "Pipeline: layers per stage, comma-separated (default: balanced by FLOPs)", TS_FIELD(train.layout.ppSplit));
  onUnknownChoice(t.add("--recompute",
                        "Activation recomputation: none; selective (the attention probabilities recomputed in the backward); "
                        "full (each transformer block or mlp hidden layer keeps its input only and runs its forward again in "
                        "the backward). The losses are the same bit for bit",
                        TS_FIELD(train.recompute)),
                  expectedChoice<wl::Recompute>());
  t.add("--memory-limit",
        "Memory each rank may hold at once (e.g. 6G; 0 = no limit but the device's): a layout that needs more ends with one line",
        TS_FIELD(train.memoryLimit))
      .notInIdentity("a bound the run is held to: a run within it does the same work");
}

// The run around the training: timing, checkpoints, output.
void addRunOptions(OptionTable<TrainRunOptions>& t) {
  t.group("The run: timing, checkpoints, output");
  const auto self = [](auto& o) -> auto& { return o; };
  // -w/--warmup: every measuring subcommand's name for the untimed part (the suite key stays warmup_steps).
  t.add("--warmup-steps", "Steps trained but not timed", TS_FIELD(warmupSteps))
      .range({0, kMaxCount})
      .renamed("-w,--warmup")
      .notInIdentity(kUntimed);
  t.add("--log-every", "Print a line every N steps (0 = about 20 lines)", TS_FIELD(logEvery))
      .range({0, kMaxCount})
      .notInIdentity("the console's lines, printed between steps");
  t.add("--ceiling,!--no-ceiling", "Measure the GEMM ceiling first, for MFU", TS_FIELD(ceiling))
      .notInIdentity("measured before the steps, for the MFU beside their figures");
  t.add("--checkpoint-dir",
        "Write checkpoints here: each rank's safetensors file (parameters, optimizer state) and index.json; any layout resumes "
        "from any other",
        TS_FIELD(train.checkpointDir))
      .notInIdentity(
          "where checkpoints go; --checkpoint-every and --checkpoint-async, which are, say when and how they are "
          "written during the steps");
  t.add("--checkpoint-async", "Snapshot the state to host memory and write it in the background (commit at the next save)",
        TS_FIELD(train.checkpointAsync));
  t.add("--checkpoint-every", "Steps between checkpoints (0 = at the end only)", TS_FIELD(train.checkpointEvery))
      .range({0, kMaxCount});
  t.add("--resume", "Continue from the latest checkpoint in --checkpoint-dir (if there is one)", TS_FIELD(train.resume))
      .notInIdentity("a run continued from its checkpoint trains the same steps as one that did not stop");
  addTimeoutFlag(t, self);
  addOutputFlags(t, self);
  addTraceFlag(t, self,
               "Write every rank's spans (steps, phases, layers, collectives, waits) as Chrome trace JSON into DIR, and "
               "DIR/merged/merged.json");
  t.add("--dump-logits",
        "Write the logits, dataset indices and loss of this run's first step to FILE (JSON), to check the model elsewhere",
        TS_FIELD(dumpLogits))
      .notInIdentity("written after the first step, outside its time");
}

// The same training once per transport setting, merged (bench/run/transports.h, as `collectives --transports`).
void addTransportOptions(OptionTable<TrainRunOptions>& t) {
  t.group("One run per transport");
  constexpr const char* kOneRunEach =
      "each transport is a run of its own, started by the launcher; a suite step is one run of the suite's processes";
  t.add("--transports",
        "Run the same training once per transport and merge, each record labelled (mpi: shm,tcp; nccl: "
        "nvlink,pcie,ib,socket), with a side-by-side summary; needs --json",
        TS_FIELD(transports))
      .commandLineOnly(kOneRunEach)
      .notInIdentity("each run's record names the transport it ran under, in its identity");
  t.add("--launcher", "How --transports starts each run (default for mpi: 'mpirun -np 2')", TS_FIELD(launcher))
      .commandLineOnly(kOneRunEach)
      .notInIdentity("how the processes were started: the same job runs");
}

// A plan of the layout instead of a run.
void addPlanOptions(OptionTable<TrainRunOptions>& t) {
  t.group("Plan without training");
  t.add("--plan",
        "Train nothing: print what each rank of the layout at N ranks would hold and compute (coordinates, stage layers, "
        "parameters, FLOPs, model states, activations), placed by the trainer's own code in one process (no mpirun); "
        "--json writes one train_plan record per rank (0: train, the default)",
        TS_FIELD(plan))
      .range({0, static_cast<double>(kMaxPlanRanks)})
      .commandLineOnly("a plan trains nothing; a suite's step trains")
      .notInIdentity("a plan is no run");
}

const OptionTable<TrainRunOptions>& trainOptions() {
  static const OptionTable<TrainRunOptions> table = [] {
    OptionTable<TrainRunOptions> t;
    t.group("Model, data and optimizer");
    addModelOptions(t);
    addOptimizerOptions(t);
    addDataOptions(t);
    addEvalOptions(t);
    addLayoutOptions(t);
    addRunOptions(t);
    addTransportOptions(t);
    addPlanOptions(t);
    return t;
  }();
  return table;
}

}  // namespace

nlohmann::json toJson(const TrainRunOptions& o) { return trainOptions().record(o); }

BackendKind trainBackendOf(const std::vector<std::string>& trainFlags) {
  CLI::App app;
  TrainRunOptions o;
  trainOptions().addToCommandLine(*app.add_subcommand("train"), o);
  std::vector<const char*> argv = {"trainscope", "train"};
  for (const auto& a : trainFlags) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    throw UsageError(fmt::format("train flags: {}", parseErrorLine(app, e, std::vector<std::string>(argv.begin(), argv.end()))));
  }
  return wl::parseDeviceSpec(o.device).cuda() ? BackendKind::kNccl : BackendKind::kMpi;
}

namespace {

SuiteStep readTrainStep(StepReader& r) {
  TrainRunOptions o;
  trainOptions().readFromSuite(r, o);
  checkTrainRun(o);  // the subcommand's own check, before the suite's first step
  checkWarmupSteps(o.warmupSteps, o.train.steps);
  SuiteStep s;
  s.config = toJson(o);
  s.run = [o](RunContext& ctx) {
    runTrainStep(o, ctx);
    return std::size_t{0};
  };
  return s;
}

}  // namespace

Subcommand trainSubcommand() {
  return {"train", "Train a reference model (mlp, cnn, transformer) end to end and measure its steps",
          [](CLI::App& sub) {
            return addTable<TrainRunOptions>(sub, trainOptions(), std::make_shared<TrainRunOptions>(), runTrainCommandLine);
          },
          readTrainStep, trainOptions().describe()};
}

}  // namespace ts
