#pragma once
// Each collective's semantics as the tests state them, apart from comm/collectives: every rank's output
// computed the obvious way from all ranks' inputs, the oracle the result check is held to (test_check.cpp).
// Its declared facts (shape, bus factor, backends) are not restated here: they are the schema's, held to
// the registry by CollectiveRegistry.EachCollectiveIsItsDeclaration. One row per collective
// (collective_references.cpp): a collective added to the registry without its row fails
// CollectiveReferences.CoverTheRegistry.
#include <cstddef>
#include <string_view>
#include <vector>

#include "comm/collectives/collective.h"

namespace ts::test {

using Buffers = std::vector<std::vector<double>>;  // [rank][element]

struct CollectiveReference {
  std::string_view name;
  // Element i of rank r's output, from every rank's input `in` and the op's count k; NaN where the op
  // defines nothing (a rooted op's other ranks).
  double (*output)(const Buffers& in, const CollectiveArgs& a, std::size_t k, int r, std::size_t i);
};

const std::vector<CollectiveReference>& collectiveReferences();
const CollectiveReference* findReference(std::string_view name);  // nullptr: none

}  // namespace ts::test
