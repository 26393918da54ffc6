// The registry (comm/collectives/registry.cpp) is the one list of collectives, built from the result
// schema's enum (comm/CMakeLists.txt): one name each, and what reads it (the --ops help, the errors)
// says the same, in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands.h"
#include "comm/collectives/collective.h"
#include "test_support.h"

namespace ts {
namespace {

std::vector<std::string> registryNames() {
  std::vector<std::string> names;
  for (const Collective* c : allCollectives()) names.emplace_back(c->name());
  return names;
}

}  // namespace

TEST(CollectiveRegistry, SchemaEnumIsTheRegistryInOrder) {
  std::ifstream in(TRAINSCOPE_SOURCE_DIR "/reports/schema/result-v1.schema.json");
  ASSERT_TRUE(in) << "cannot read the result schema";
  const nlohmann::json schema = nlohmann::json::parse(in);
  const auto schemaOps = schema.at("$defs").at("collective").at("properties").at("op").at("enum").get<std::vector<std::string>>();
  EXPECT_EQ(schemaOps, registryNames())
      << "reports/schema/result-v1.schema.json's collective op enum must list the registry, in its order";
}

TEST(CollectiveRegistry, OneNameEachAndItsAccessor) {
  std::set<std::string> names;
  for (const Collective* c : allCollectives()) {
    EXPECT_TRUE(names.insert(std::string(c->name())).second) << c->name();
    EXPECT_EQ(&findCollective(c->name()), c) << c->name();
  }
  // The accessors code calls name the collective of that name.
  EXPECT_EQ(collectives::all_reduce().name(), "all_reduce");
  EXPECT_EQ(collectives::reduce_scatter().name(), "reduce_scatter");
  EXPECT_EQ(collectives::sendrecv().name(), "sendrecv");
  // The other spellings the code once used are not names.
  for (const char* other : {"all_to_all", "send_recv"}) EXPECT_THROW(findCollective(other), UsageError) << other;
}

TEST(CollectiveRegistry, NameListAndErrorsListTheRegistry) {
  const std::vector<std::string> names = registryNames();
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ", ") + n;
  EXPECT_EQ(collectiveNameList(), joined);
  EXPECT_EQ(test::usageError([] { findCollective("allreduce"); }),
            "unknown collective 'allreduce' (expected all, or a comma list of " + joined + ")");
}

TEST(CollectiveRegistry, OpsHelpListsTheRegistry) {
  const auto& all = subcommands();
  const auto cmd = std::find_if(all.begin(), all.end(), [](const Subcommand& s) { return s.name == "collectives"; });
  ASSERT_NE(cmd, all.end());
  const auto ops = std::find_if(cmd->options.begin(), cmd->options.end(), [](const OptionInfo& o) { return o.names == "--ops"; });
  ASSERT_NE(ops, cmd->options.end());
  EXPECT_EQ(ops->help, "all, or a comma list of " + collectiveNameList());
}

}  // namespace ts
