#pragma once
// The console table of `trainscope scale`: one row per point, from its scaling record.
#include <filesystem>
#include <string>
#include <vector>

#include "bench/run/transports.h"
#include "bench/scale/scaling_record.h"

namespace ts {

struct ScaleOptions;

std::string scaleTableHeader(const ScaleOptions& o, const std::vector<int>& ranks, const std::filesystem::path& pointsDir);
// The line before a transport's points (--transports): its name, what it is and the variables it sets.
std::string scaleTransportLine(const TransportSetting& t);
// A completed point's figures, or a failed one's error.
std::string scaleTableRow(const ScalingRecord& r);

}  // namespace ts
