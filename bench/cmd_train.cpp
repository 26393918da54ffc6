// `trainscope train`: the command line of a training run.
#include <memory>

#include "bench/commands.h"
#include "bench/train_options.h"

namespace ts {

Action addTrainCommand(CLI::App& app) {
  auto o = std::make_shared<TrainRunOptions>();
  auto& t = o->train;
  CLI::App* sub = app.add_subcommand("train", "Train a reference model (mlp, cnn, transformer) end to end and measure its steps");
  sub->add_option("--model", t.model, "mlp, cnn or transformer")->capture_default_str();
  sub->add_option("--preset", t.preset, "Named size: mlp tiny|small|base; cnn tiny|resnet20|resnet18|resnet34; transformer tiny|small|gpt2|gpt2-medium")
      ->capture_default_str();
  sub->add_option("--set", t.overrides, "Override a model field, key=value (depth, width, activation; widths, blocks, stem; layers, hidden, heads, seq_len, vocab)");
  sub->add_option("--steps", t.steps, "Optimizer steps")->capture_default_str();
  sub->add_option("--batch", t.batch, "Global batch per step (samples, or sequences for the transformer)")->capture_default_str();
  sub->add_option("--micro-batches", t.microBatches, "Gradient accumulation: micro-batches per step (must divide --batch)")->capture_default_str();
  sub->add_option("--device", t.device, "cpu, cuda (GPU 0) or cuda:N")->capture_default_str();
  sub->add_option("--precision", t.precision, "float32; tf32 (CUDA); bfloat16 / float16: mixed precision with float32 master weights (16-bit rounding emulated)")
      ->capture_default_str();
  sub->add_option("--loss-scale", t.lossScale, "float16: the initial dynamic loss scale")->capture_default_str();
  sub->add_option("--loss-scale-interval", t.lossScaleInterval, "float16: good steps before the loss scale doubles")->capture_default_str();
  sub->add_option("--optimizer", t.optimizer.kind, "sgd, adam, adamw, rmsprop or lamb")->capture_default_str();
  sub->add_option("--lr", t.schedule.lr, "Peak learning rate")->capture_default_str();
  sub->add_option("--schedule", t.schedule.kind, "constant, step, cosine or linear (the last two after --lr-warmup)")->capture_default_str();
  sub->add_option("--lr-warmup", t.schedule.warmup, "Linear learning-rate warm-up steps (cosine, linear)")->capture_default_str();
  sub->add_option("--min-lr", t.schedule.minLr, "Learning rate at the end of a cosine or linear decay")->capture_default_str();
  sub->add_option("--lr-step-size", t.schedule.stepSize, "Steps between decays (step schedule)")->capture_default_str();
  sub->add_option("--lr-gamma", t.schedule.gamma, "Decay factor (step schedule)")->capture_default_str();
  sub->add_option("--weight-decay", t.optimizer.weightDecay, "Weight decay (weights only, not biases or norms)")->capture_default_str();
  sub->add_option("--momentum", t.optimizer.momentum, "SGD momentum")->capture_default_str();
  sub->add_option("--beta1", t.optimizer.beta1, "Adam/AdamW/LAMB beta1")->capture_default_str();
  sub->add_option("--beta2", t.optimizer.beta2, "Adam/AdamW/LAMB beta2")->capture_default_str();
  sub->add_option("--clip-norm", t.clipNorm, "Clip the global gradient norm to this (0 = off)")->capture_default_str();
  sub->add_option("--seed", t.seed, "Seed of the initial weights and the data order")->capture_default_str();
  sub->add_option("--data", t.data, "synthetic, mnist:DIR, cifar10:DIR or text:FILE")->capture_default_str();
  auto& l = t.layout;
  sub->add_option("--dp", l.dp, "Data-parallel ranks (0 = the processes left by --tp and --pp)")->capture_default_str();
  sub->add_option("--tp", l.tp, "Tensor-parallel ranks")->capture_default_str();
  sub->add_option("--pp", l.pp, "Pipeline stages")->capture_default_str();
  sub->add_option("--zero", l.zero, "ZeRO stage over the data-parallel group: 0 (all-reduce), 1 (optimizer state sharded), 2 (gradients too), 3 (parameters too)")
      ->capture_default_str();
  sub->add_option("--sync", l.sync, "How data-parallel ranks combine gradients: allreduce, or ps (parameter servers)")->capture_default_str();
  sub->add_option("--ps-shards", l.psShards, "--sync ps: parameter shards, served by data-parallel ranks 0..N-1")->capture_default_str();
  sub->add_option("--bucket-mb", l.bucketMb, "Gradient bucket size in MiB")->capture_default_str();
  sub->add_option("--overlap", l.overlap, "on: send each bucket as soon as its gradients are ready (during the backward); off: after it")
      ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"on", true}, {"off", false}}))
      ->default_str("on");
  sub->add_option("--pp-schedule", l.schedule, "Pipeline schedule: gpipe or 1f1b")->capture_default_str();
  sub->add_option("--pp-split", l.ppSplit, "Pipeline: layers per stage, comma-separated (default: balanced by FLOPs)")->delimiter(',');
  sub->add_option("--warmup-steps", o->warmupSteps, "Steps trained but not timed")->capture_default_str();
  sub->add_option("--log-every", o->logEvery, "Print a line every N steps (0 = about 20 lines)")->capture_default_str();
  sub->add_flag("--ceiling,!--no-ceiling", o->ceiling, "Measure the GEMM ceiling first, for MFU")->capture_default_str();
  sub->add_option("--checkpoint-dir", t.checkpointDir, "Write checkpoints here (safetensors weights + optimizer state + trainer.json)");
  sub->add_option("--checkpoint-every", t.checkpointEvery, "Steps between checkpoints (0 = at the end only)")->capture_default_str();
  sub->add_flag("--resume", t.resume, "Continue from the latest checkpoint in --checkpoint-dir (if there is one)");
  sub->add_option("--timeout", o->timeoutS, "Seconds without progress before the run is stopped (0 = never)")->capture_default_str();
  sub->add_option("--json", o->jsonPath, "Write the result document here; records stream to the .jsonl beside it");
  sub->add_option("--label", o->label, "A label for this run");
  sub->add_option("--trace", o->traceDir, "Write every rank's spans (steps, phases, layers, collectives, waits) as Chrome trace JSON into DIR, and DIR/merged.json");
  sub->add_option("--dump-logits", o->dumpLogits, "Write the logits, dataset indices and loss of this run's first step to FILE (JSON), to check the model elsewhere");
  return [o](const std::vector<std::string>& argv) { return runTrain(*o, argv); };
}

}  // namespace ts
