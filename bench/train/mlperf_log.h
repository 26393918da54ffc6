#pragma once
// An MLPerf-style log beside the result (--mllog FILE): one `:::MLLOG {json}` line per event, as
// mlperf_logging's mllog writes them — namespace, time_ms (Unix epoch, ms), event_type (POINT_IN_TIME,
// INTERVAL_START, INTERVAL_END), key, value, metadata — so its compliance checker and result parsers can
// read a trainscope run's time to target. The keys are MLPerf's: init_start/init_stop, run_start/run_stop
// (metadata status success or aborted), eval_start/eval_stop, eval_accuracy (metadata epoch_num), and the
// run's submission_benchmark, global_batch_size, opt_name, opt_base_learning_rate, train_samples and
// eval_samples. Each line is flushed as it is written: a killed run keeps what it logged.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace ts {

enum class MlEvent { kPoint, kStart, kEnd };

class MlperfLog {
 public:
  // Opens (truncates) path; UsageError, one line, when it cannot.
  explicit MlperfLog(const std::string& path);
  void log(MlEvent type, const std::string& key, const nlohmann::json& value = nullptr,
           const nlohmann::json& metadata = nlohmann::json::object());

 private:
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

}  // namespace ts
