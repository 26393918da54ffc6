#pragma once
// `trainscope train --transports shm,tcp`: the same training job once per transport setting, each in a launch of its
// own (bench/run/transports.h, the one implementation `collectives --transports` runs too), merged into one result,
// and the console's side-by-side summary of what each fabric gave the job.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

// The summary of merged train records, one row per transport of `transports` in the order run: the median step time,
// the exposed communication (the median over the ranks, as `scale` reports it), the throughput, and the step time
// against the first transport's; a transport whose run did not complete says so. "" without any train record.
std::string transportSummary(const nlohmann::json& records, const std::vector<std::string>& transports);

}  // namespace ts
