#pragma once
// What `trainscope scale` was asked to do (scale_command.cpp fills it; scale_runner.cpp runs it).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/scale/scale_choices.h"

namespace ts {

struct ScaleOptions {
  std::vector<int> ranks = {1, 2, 4};
  ScaleMode mode = ScaleMode::kWeak;
  std::int64_t batch = 32;
  LauncherKind launcher = LauncherKind::kMpirun;
  std::string launcherArgs;  // extra launcher arguments, split on spaces ("--oversubscribe", "--hostfile h")
  std::string pointsDir;     // each point's result document and log ("" = <json>.points, or a temporary directory)
  std::string jsonPath;
  std::string label;
  std::string traceDir;                // each point traces its training into <traceDir>/ranks<n> ("" = no trace)
  std::vector<std::string> trainArgs;  // every other flag: passed to `trainscope train` unchanged
  std::string transports;              // every point once per transport setting (bench/run/transports.h); "" = as set
};

class ResultWriter;

// The run's config: every option of scale's table as given, under its suite key (scale_command.cpp, from the table).
nlohmann::json toJson(const ScaleOptions& o);

// Checks the options (UsageError); the rank counts sorted and without repeats.
std::vector<int> validateScale(const ScaleOptions& o);
// Runs every point and adds its records to `writer` (process 0's); returns the number of points that failed.
// `step` (a suite step's name) goes into every record when given.
int runScaleStudy(const ScaleOptions& o, ResultWriter& writer, const std::string& step = "");
// `trainscope scale`: a session of its own (one process).
int runScale(const ScaleOptions& o, const std::vector<std::string>& argv);

}  // namespace ts
