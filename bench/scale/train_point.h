#pragma once
// What `scale` reads of a point's train record: the facts the scaling record repeats and the figures of a
// completed point. The one reader of that record's keys in C++; the record is bench/train/train_record.cpp's
// toJson, and a unit test reads a record it wrote back through these (tests/unit/test_train_record.cpp), so a
// key renamed on one side fails there, not as a scaling study with empty figures.
#include <utility>

#include <nlohmann/json.hpp>

#include "bench/scale/scaling_record.h"

namespace ts {

// Whether the point's train record is of a run that completed and timed its steps (it has a throughput).
bool completedPoint(const nlohmann::json& train);
double throughputOf(const nlohmann::json& train);  // items per second, of a completed point
ScalingTrainFacts trainFactsOf(const nlohmann::json& train);
// The figures of a completed point of `ranks` ranks, against the smallest completed point (`base`: its
// ranks and throughput).
ScalingFigures figuresOf(const nlohmann::json& train, int ranks, std::pair<int, double> base);

}  // namespace ts
