// THE list of collectives. Adding one: its file, its accessor's declaration and its place in the list
// below. The order is that of `--ops all`, the help and the report (which reads it from the result
// schema's enum; test_collective_registry holds the schema equal to this list).
#include <fmt/format.h>

#include "base/error.h"
#include "comm/collectives/collective.h"

namespace ts {

// Each defined in the file of that name.
const Collective& allReduceCollective();
const Collective& allGatherCollective();
const Collective& reduceScatterCollective();
const Collective& broadcastCollective();
const Collective& reduceCollective();
const Collective& allToAllCollective();
const Collective& gatherCollective();
const Collective& scatterCollective();
const Collective& sendRecvCollective();

const std::vector<const Collective*>& allCollectives() {
  static const std::vector<const Collective*> all = {
      &allReduceCollective(), &allGatherCollective(), &reduceScatterCollective(), &broadcastCollective(), &reduceCollective(),
      &allToAllCollective(),  &gatherCollective(),    &scatterCollective(),       &sendRecvCollective(),
  };
  return all;
}

std::string collectiveNameList() {
  std::string names;
  for (const Collective* c : allCollectives()) names += (names.empty() ? "" : ", ") + std::string(c->name());
  return names;
}

const Collective& findCollective(std::string_view name) {
  for (const Collective* c : allCollectives())
    if (c->name() == name) return *c;
  throw UsageError(fmt::format("unknown collective '{}' (expected all, or a comma list of {})", name, collectiveNameList()));
}

const Collective& collectiveOf(CollectiveKind kind) {
  for (const Collective* c : allCollectives())
    if (c->kind() == kind) return *c;
  throw Error(fmt::format("internal: no collective in the registry runs CollectiveKind {}", static_cast<int>(kind)));
}

}  // namespace ts
