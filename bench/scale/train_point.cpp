#include "bench/scale/train_point.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {
namespace {

double medianOfRanks(const nlohmann::json& ranks, const char* field) {
  std::vector<double> v;
  for (const auto& r : ranks)
    if (r.contains(field)) v.push_back(r.at(field).get<double>());
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::optional<std::string> textOf(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? std::optional<std::string>(j[key].get<std::string>()) : std::nullopt;
}

// A closed choice the train record names, null where it names none. The points run this binary, so a name it does not
// know is a train record of another build: one line, never a fact dropped or guessed.
template <NamedEnum E>
std::optional<E> choiceOf(const nlohmann::json& j, const char* key) {
  const std::optional<std::string> name = textOf(j, key);
  if (!name) return std::nullopt;
  if (const std::optional<E> e = enumFromName<E>(*name)) return e;
  throw Error(fmt::format("the point's train record: {} '{}' is not {}", key, *name, enumNameList<E>()));
}

// A field of the train record's block that may be null there.
std::optional<double> numberOf(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<double>(j.get<double>());
}

}  // namespace

bool completedPoint(const nlohmann::json& train) { return train.value("completed", false) && train.contains("throughput_per_s"); }

double throughputOf(const nlohmann::json& train) { return train.at("throughput_per_s").get<double>(); }

ScalingTrainFacts trainFactsOf(const nlohmann::json& t) {
  return {choiceOf<wl::ModelKind>(t, "model"), textOf(t, "preset"), choiceOf<wl::DeviceKind>(t, "backend"),
          choiceOf<Precision>(t, "precision"), t.contains("layout") ? t.at("layout").at("name").get<std::string>() : "single"};
}

ScalingFigures figuresOf(const nlohmann::json& t, int ranks, std::pair<int, double> base) {
  ScalingFigures f;
  f.baselineRanks = base.first;
  f.stepTimeUs = t.at("step_time_us").at("median").get<double>();
  f.stepTimeMinUs = t.at("step_time_us").at("min").get<double>();
  f.stepTimeP95Us = t.at("step_time_us").at("p95").get<double>();
  f.throughputPerS = throughputOf(t);
  f.item = choiceOf<wl::ItemKind>(t, "item");
  f.speedup = f.throughputPerS / base.second;
  f.efficiency = (f.throughputPerS / ranks) / (base.second / base.first);
  const nlohmann::json rs = t.value("ranks", nlohmann::json::array());
  f.breakdown = {medianOfRanks(rs, "compute_us"),       medianOfRanks(rs, "data_us"),
                 medianOfRanks(rs, "sync_us"),          medianOfRanks(rs, "idle_us"),
                 medianOfRanks(rs, "communication_us"), medianOfRanks(rs, "exposed_communication_us")};
  if (t.contains("communication")) f.overlap = numberOf(t.at("communication").at("overlap"));
  if (t.contains("stragglers")) f.lateRanks = t.at("stragglers").at("late_ranks").get<std::vector<int>>();
  if (t.contains("pipeline")) f.pipelineBubble = numberOf(t.at("pipeline").at("measured_bubble"));
  if (t.contains("target")) {
    const nlohmann::json& g = t.at("target");
    f.target =
        ScalingTarget{g.at("reached").get<bool>(), g.value("steps_to_target", std::int64_t{0}), g.value("time_to_target_s", 0.0)};
  }
  return f;
}

}  // namespace ts
