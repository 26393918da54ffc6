#include <fmt/format.h>

#include "base/error.h"
#include "comm/collectives/collective.h"

namespace ts {

const std::vector<const Collective*>& allCollectives() {
  static const std::vector<const Collective*> all = {
      &allReduceCollective(), &allGatherCollective(), &reduceScatterCollective(),
      &broadcastCollective(), &reduceCollective(),    &allToAllCollective(),
      &gatherCollective(),    &scatterCollective(),   &sendRecvCollective(),
  };
  return all;
}

const Collective& findCollective(std::string_view name) {
  std::string known;
  for (const Collective* c : allCollectives()) {
    if (c->name() == name) return *c;
    known += (known.empty() ? "" : ", ") + std::string(c->name());
  }
  throw UsageError(fmt::format("unknown collective '{}' (expected all, or a comma list of {})", name, known));
}

}  // namespace ts
