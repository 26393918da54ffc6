// A closed choice that a record or a trace carries is an enum in C++ (its names: EnumNames) and the enum of its
// field in the schema, which Python reads; these hold the two together, so a value added or renamed on one side
// fails here rather than as a record the schema refuses or a span the analysis no longer finds.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/precision.h"
#include "bench/collectives/collectives_choices.h"
#include "bench/links/links_options.h"
#include "bench/run/trace_files.h"
#include "bench/train/train_record.h"
#include "comm/bootstrap.h"
#include "comm/communicator.h"
#include "kernels/trace.h"
#include "workloads/device_spec.h"
#include "workloads/models/model.h"

namespace ts {
namespace {

nlohmann::json schema(const std::string& file) {
  std::ifstream in(TRAINSCOPE_SOURCE_DIR "/reports/schema/" + file);
  if (!in) throw std::runtime_error("cannot read " + file);
  return nlohmann::json::parse(in);
}

std::vector<std::string> enumAt(const nlohmann::json& doc, const std::string& pointer) {
  return doc.at(nlohmann::json::json_pointer(pointer)).get<std::vector<std::string>>();
}

// E's canonical names in declaration order, less the values a record never carries (a choice still to resolve).
template <NamedEnum E>
std::vector<std::string> recordedNames(std::initializer_list<E> unrecorded = {}) {
  std::vector<std::string> out;
  for (const auto& [name, e] : EnumNames<E>::kNames)
    if (nameOf(e) == name && std::find(unrecorded.begin(), unrecorded.end(), e) == unrecorded.end()) out.emplace_back(name);
  return out;
}

TEST(SchemaEnums, TheRecordsChoicesAreTheResultSchemas) {
  const nlohmann::json result = schema("result-v1.schema.json");
  EXPECT_EQ(recordedNames<BackendKind>({BackendKind::kAuto}), enumAt(result, "/$defs/collective/properties/backend/enum"));
  EXPECT_EQ(recordedNames<BackendKind>({BackendKind::kAuto}),
            enumAt(result, "/$defs/run/properties/layouts/items/properties/backend/enum"));
  EXPECT_EQ(recordedNames<TimerKind>(), enumAt(result, "/$defs/collective/properties/timer/enum"));
  EXPECT_EQ(recordedNames<IssueKind>(), enumAt(result, "/$defs/collective/properties/issue/enum"));
  EXPECT_EQ(recordedNames<CacheState>(), enumAt(result, "/$defs/collective/properties/cache/enum"));
  EXPECT_EQ(recordedNames<BootstrapKind>({BootstrapKind::kAuto}),
            enumAt(result, "/$defs/run/properties/world/properties/bootstrap/enum"));
  EXPECT_EQ(recordedNames<wl::DeviceKind>(), enumAt(result, "/$defs/train/properties/backend/enum"));
  EXPECT_EQ(recordedNames<wl::ItemKind>(), enumAt(result, "/$defs/train/properties/item/enum"));
  EXPECT_EQ(recordedNames<wl::ModelKind>(), enumAt(result, "/$defs/train/properties/model/enum"));
  EXPECT_EQ(recordedNames<Precision>(), enumAt(result, "/$defs/train/properties/precision/enum"));
  EXPECT_EQ(recordedNames<TargetMetric>(), enumAt(result, "/$defs/train/properties/target/properties/metric/enum"));
  // An option's list of choices is an array of that enum in the run's config (`links --tests`: "all" resolved).
  EXPECT_EQ(recordedNames<LinkTest>(), enumAt(result, "/$defs/config_links/properties/tests/items/enum"));
}

// A collectives run's config holds its closed choices as given, `auto` included (resolved beside them): each is the
// enum of its option, generated from the option table (bench/config_schema.h), not free text.
TEST(SchemaEnums, TheCollectivesConfigsChoicesAreTheirEnums) {
  const nlohmann::json result = schema("result-v1.schema.json");
  const std::string config = "/$defs/config_collectives/properties/";
  EXPECT_EQ(recordedNames<BackendKind>(), enumAt(result, config + "backend/enum"));
  EXPECT_EQ(recordedNames<BootstrapKind>(), enumAt(result, config + "bootstrap/enum"));
  EXPECT_EQ(recordedNames<PlacementChoice>(), enumAt(result, config + "placement/enum"));
  EXPECT_EQ(recordedNames<MpiReduceScatterChoice>(), enumAt(result, config + "mpi_reduce_scatter/enum"));
  EXPECT_EQ(recordedNames<IssueChoice>(), enumAt(result, config + "issue/enum"));
  EXPECT_EQ(recordedNames<CacheChoice>(), enumAt(result, config + "cache/enum"));
}

// A scaling record repeats its train record's facts (bench/scale/train_point.h): each field's choices are the train
// record's, by reference, or null.
TEST(SchemaEnums, AScalingRecordsFactsAreItsTrainRecordsChoices) {
  const nlohmann::json result = schema("result-v1.schema.json");
  for (const std::string field : {"model", "backend", "precision", "item"}) {
    const nlohmann::json& choices = result.at(nlohmann::json::json_pointer("/$defs/scaling/properties/" + field + "/anyOf"));
    EXPECT_EQ(choices, nlohmann::json::parse(R"([{"$ref": "#/$defs/train/properties/)" + field + R"("}, {"type": "null"}])"))
        << field;
  }
}

// The roles, and the Kineto category a span of each role carries: the schema's rules on a complete ("X") event.
TEST(SchemaEnums, TheTraceRolesAreTheTraceSchemasWithItsKinetoCategories) {
  const nlohmann::json trace = schema("trace-v2.schema.json");
  EXPECT_EQ(recordedNames<trace::Role>(), enumAt(trace, "/$defs/spanArgs/properties/role/enum"));
  std::vector<std::string> mapped;
  for (const nlohmann::json& rule : trace.at("/$defs/event/allOf"_json_pointer)) {
    if (rule.at("if").at("properties").at("ph").value("const", "") != "X") continue;
    for (const nlohmann::json& byRole : rule.at("then").at("allOf"))
      for (const std::string name : byRole.at("/if/properties/args/properties/role/enum"_json_pointer)) {
        const std::optional<trace::Role> role = enumFromName<trace::Role>(name);
        ASSERT_TRUE(role) << name;
        EXPECT_EQ(kinetoCategory(*role), byRole.at("/then/properties/cat/const"_json_pointer).get<std::string>()) << name;
        mapped.push_back(name);
      }
  }
  std::sort(mapped.begin(), mapped.end());
  std::vector<std::string> every = recordedNames<trace::Role>();
  std::sort(every.begin(), every.end());
  EXPECT_EQ(mapped, every);  // each role has its category in the schema, once
}

// The main thread's name, by which the analysis finds it in a trace without steps.
TEST(SchemaEnums, TheMainThreadIsNamedAsTheTraceSchemaSays) {
  EXPECT_EQ(kMainThreadName, schema("trace-v2.schema.json").at("/$defs/mainThread/const"_json_pointer).get<std::string>());
}

TEST(SchemaEnums, ChoicesReadBackFromTheirNames) {
  for (const auto& [name, e] : EnumNames<trace::Role>::kNames) EXPECT_EQ(enumFromName<trace::Role>(name), e) << name;
  for (const auto& [name, e] : EnumNames<BackendKind>::kNames) EXPECT_EQ(enumFromName<BackendKind>(name), e) << name;
  for (const auto& [name, e] : EnumNames<BootstrapKind>::kNames) EXPECT_EQ(enumFromName<BootstrapKind>(name), e) << name;
  EXPECT_FALSE(enumFromName<BackendKind>("gloo"));
  EXPECT_EQ(enumNameList<BackendKind>(), "auto, mpi or nccl");
}

}  // namespace
}  // namespace ts
