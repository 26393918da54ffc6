// The registry: the collectives in the order of their declarations in the result schema (the collective
// op's oneOf), which the build turns into collective_list.inc (comm/CMakeLists.txt) and compiles
// comm/collectives/<name>.cpp for. Adding a collective: its declaration there, its file (with
// TS_DEFINE_COLLECTIVE), and its test's reference (tests/unit/collective_references.cpp). The order is that
// of `--ops all`, the help and the report.
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "comm/collectives/collective.h"

namespace ts {

const std::vector<const Collective*>& allCollectives() {
  static const std::vector<const Collective*> all = {
#define TS_COLLECTIVE(name, ...) &collectives::name(),
#include "comm/collectives/collective_list.inc"
#undef TS_COLLECTIVE
  };
  return all;
}

std::string collectiveNameList() {
  std::vector<std::string_view> names;
  for (const Collective* c : allCollectives()) names.push_back(c->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

const Collective& findCollective(std::string_view name) {
  for (const Collective* c : allCollectives())
    if (c->name() == name) return *c;
  throw UsageError(fmt::format("unknown collective '{}' (expected all, or a comma list of {})", name, collectiveNameList()));
}

}  // namespace ts
