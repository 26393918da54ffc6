#pragma once
// What `trainscope train` was asked to do (train_command.cpp fills it; train_runner.cpp runs it).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/failures/default_timeout.h"
#include "bench/train/mlperf_submission.h"
#include "workloads/trainer.h"

namespace ts {

struct RunContext;

struct TrainRunOptions {
  wl::TrainOptions train;        // train.device is read from `device` by runTrainStep
  std::string device = "cpu";    // --device as given: cpu, cuda or cuda:N (the table reads no struct)
  std::int64_t warmupSteps = 2;  // the first steps are trained but not timed (caches, allocator, first touch)
  std::int64_t logEvery = 0;     // print a line every N steps (0: about 20 lines per run)
  bool ceiling = true;           // measure the GEMM ceiling for MFU
  double timeoutS = kDefaultTimeoutS;
  std::string jsonPath;
  std::string label;
  std::string traceDir;              // --trace: per-rank and merged Chrome trace files of the training steps
  std::string dumpLogits;            // write the first step's logits, sample indices and loss here (JSON): for checking
  std::string mllogPath;             // --mllog: an MLPerf :::MLLOG log of the run (bench/train/mlperf_run_log.h)
  MlperfSubmission mllogSubmission;  // what that log states of its submission (--mllog-org, ...)
  std::string transports;            // --transports: one run per transport setting, merged (bench/run/transports.h)
  std::string launcher;              // --launcher: how each of those runs is started ("" = mpirun -np 2 for mpi)
  std::int64_t plan = 0;             // --plan N: plan the layout at N ranks instead of training (bench/train/train_plan.h)
};

// The run's config as its record states it: every option of train's table as given, under its suite key
// (train_command.cpp, from the table); runTrainStep hands it to the Trainer (TrainOptions::given), whose config() adds
// what the run resolved them to ("resolved"): the record's config and each checkpoint's.
nlohmann::json toJson(const TrainRunOptions& o);
// Every check of a run's options that runs nothing (no process met, no data read, nothing allocated): the values, the
// model's size, the data's spec and files, the device's spec, where the run writes. UsageError, one line. `trainscope
// train` checks with it before it starts; a suite checks each train step with it before its first step runs. (The GPU is
// opened, the data read and the warm-up checked when the run starts.)
void checkTrainRun(const TrainRunOptions& o);
// The warm-up against the steps there are to train: the run checks it once it knows where it resumes (after every other
// check, the data's and the device's included); a suite's step, before the suite's first step, against all its steps.
void checkWarmupSteps(std::int64_t warmupSteps, std::int64_t stepsToTrain);
// Trains and writes one `train` record (also when the run fails part-way: the steps done are kept).
void runTrainStep(const TrainRunOptions& o, RunContext& ctx);
int runTrain(const TrainRunOptions& o, const std::vector<std::string>& argv);
// The command line's `trainscope train`: runTrain, or with --transports one run per transport setting, merged into one
// result with a side-by-side summary (bench/train/train_transports.cpp).
int runTrainCommandLine(const TrainRunOptions& o, const std::vector<std::string>& argv);

}  // namespace ts
