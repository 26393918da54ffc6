// The registry (comm/collectives/registry.cpp) is the one list of collectives, built from their
// declarations in the result schema (comm/CMakeLists.txt): one name each, each collective what its
// declaration says, and what reads it (the --ops help, the errors, --ops all on a backend) says the same,
// in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/collectives/collectives_options.h"
#include "bench/commands.h"
#include "comm/collectives/collective.h"
#include "test_support.h"

namespace ts {
namespace {

std::vector<std::string> collectiveRegistryNames() {
  std::vector<std::string> names;
  for (const Collective* c : allCollectives()) names.emplace_back(c->name());
  return names;
}

// The declarations as the source tree has them now (the build compiled them in when it was configured).
nlohmann::json declarations() {
  std::ifstream in(TRAINSCOPE_SOURCE_DIR "/reports/schema/result-v1.schema.json");
  if (!in) throw std::runtime_error("cannot read the result schema");
  return nlohmann::json::parse(in).at("$defs").at("collective").at("properties").at("op").at("oneOf");
}

// A collective declared for MPI only, as one would be (alltoallv, ...), for what --ops does with it.
constexpr CollectiveFacts kMpiOnlyFacts{"mpi_only", BufferShape::kFlat, BusFactor::kOne, false, false, true, false};
class MpiOnly final : public Collective {
 public:
  MpiOnly() : Collective(kMpiOnlyFacts) {}
  double input(const CollectiveArgs&, int, std::size_t) const override { return 0; }
  std::optional<double> expected(const CollectiveArgs&, int, std::size_t, const CollectiveLayout&) const override { return 0; }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {}; }
};

}  // namespace

TEST(CollectiveRegistry, SchemaDeclarationsAreTheRegistryInOrder) {
  std::vector<std::string> declared;
  for (const auto& d : declarations()) declared.push_back(d.at("const").get<std::string>());
  EXPECT_EQ(declared, collectiveRegistryNames())
      << "reports/schema/result-v1.schema.json's collective op declarations must list the registry, in its order";
}

TEST(CollectiveRegistry, EachCollectiveIsItsDeclaration) {
  // The three bus factors as the schema spells them, and what each is on n ranks (docs/architecture.md).
  const std::map<std::string, double (*)(int)> formulas = {{"2(n-1)/n", [](int n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; }},
                                                           {"(n-1)/n", [](int n) { return n > 1 ? (n - 1.0) / n : 0.0; }},
                                                           {"1", [](int) { return 1.0; }}};
  const std::map<std::string, BufferShape> shapes = {{"flat", BufferShape::kFlat},
                                                     {"gathered", BufferShape::kGathered},
                                                     {"scattered", BufferShape::kScattered},
                                                     {"exchanged", BufferShape::kExchanged}};
  for (const auto& d : declarations()) {
    const std::string name = d.at("const").get<std::string>();
    const Collective& c = findCollective(name);
    EXPECT_EQ(c.shape(), shapes.at(d.at("x-shape").get<std::string>())) << name;
    const auto formula = formulas.at(d.at("x-bus-factor").get<std::string>());
    for (int n = 1; n <= 8; ++n) EXPECT_DOUBLE_EQ(c.busFactor(n), formula(n)) << name << " on " << n << " ranks";
    EXPECT_EQ(c.reduces(), d.at("x-reduces").get<bool>()) << name;
    EXPECT_EQ(c.rooted(), d.at("x-rooted").get<bool>()) << name;
    const auto backends = d.at("x-backends").get<std::set<std::string>>();
    EXPECT_EQ(c.runsOn(BackendKind::kMpi), backends.count("mpi") == 1) << name;
    EXPECT_EQ(c.runsOn(BackendKind::kNccl), backends.count("nccl") == 1) << name;
  }
}

TEST(CollectiveBackends, OpsAllTakesWhatTheBackendRunsAndNamesTheRest) {
  const MpiOnly mpiOnly;
  CollectivesOptions o;
  o.allOps = true;
  o.ops = {&collectives::all_reduce(), &mpiOnly, &collectives::sendrecv()};
  CollectivesOptions onMpi = o;
  fitOpsToBackend(onMpi, BackendKind::kMpi);
  EXPECT_EQ(onMpi.ops, o.ops);
  EXPECT_TRUE(onMpi.opsLeftOut.empty());
  CollectivesOptions onNccl = o;
  fitOpsToBackend(onNccl, BackendKind::kNccl);
  EXPECT_EQ(onNccl.ops, (std::vector<const Collective*>{&collectives::all_reduce(), &collectives::sendrecv()}));
  EXPECT_EQ(onNccl.opsLeftOut, std::vector<const Collective*>{&mpiOnly});
}

TEST(CollectiveBackends, ANamedOpTheBackendDoesNotRunIsOneLine) {
  const MpiOnly mpiOnly;
  CollectivesOptions o;
  o.ops = {&collectives::all_reduce(), &mpiOnly};
  EXPECT_EQ(test::usageError([&] { fitOpsToBackend(o, BackendKind::kNccl); }),
            "--ops mpi_only: the nccl backend does not run it (its backends: mpi)");
  o.ops = {&mpiOnly};
  o.allOps = true;
  EXPECT_EQ(test::usageError([&] { fitOpsToBackend(o, BackendKind::kNccl); }),
            "--ops all: the nccl backend runs none of the collectives");
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
  const std::vector<std::string> names = collectiveRegistryNames();
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
