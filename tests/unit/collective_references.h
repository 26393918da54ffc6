#pragma once
// Each collective as the tests state it, apart from comm/collectives: its bus factor by the formula of
// docs/architecture.md, whether its record counts the whole buffer, and every rank's output computed the
// obvious way from all ranks' inputs. One row per collective (collective_references.cpp): a collective
// added to the registry without its row fails CollectiveReferences.CoverTheRegistry.
#include <cstddef>
#include <string_view>
#include <vector>

#include "comm/collectives/collective.h"

namespace ts::test {

using Buffers = std::vector<std::vector<double>>;  // [rank][element]

struct CollectiveReference {
  std::string_view name;
  double (*busFactor)(int nranks);
  bool wholeBuffer;  // the record's bytes are nranks blocks of count (gathered, scattered, exchanged)
  // Element i of rank r's output, from every rank's input `in` and the op's count k; NaN where the op
  // defines nothing (a rooted op's other ranks).
  double (*output)(const Buffers& in, const CollectiveArgs& a, std::size_t k, int r, std::size_t i);
};

const std::vector<CollectiveReference>& collectiveReferences();
const CollectiveReference* findReference(std::string_view name);  // nullptr: none

}  // namespace ts::test
