#pragma once
// Filling inputs and checking outputs of any collective on the host, from its file's four answers.
#include <cstddef>

#include "comm/collectives/collective.h"

namespace ts {

struct CheckResult {
  std::size_t checked = 0;     // elements compared
  std::size_t wrong = 0;       // elements that differ from the expected value
  std::size_t firstWrong = 0;  // index of the first wrong element (valid when wrong > 0)
  double firstGot = 0, firstExpected = 0;
};

// Elements [begin, end) of a buffer: a piece of it, so that a buffer of any size passes through a staging
// buffer of a fixed size (the sweep's host memory stays that of its communication buffers).
struct ElementRange {
  std::size_t begin = 0, end = 0;
};

// Writes `rank`'s inputs into `hostSend` (layout.sendElems elements of a.dtype).
void fillInput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay, void* hostSend);
// Writes input elements r.begin .. r.end - 1 of `rank` into `host` (element r.begin at host[0]).
void fillInput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay, void* host, ElementRange r);
// Compares `hostRecv` (layout.recvElems elements) with the op's expected output. Exact, except avg on
// floating types (NCCL pre-multiplies by 1/n), which allows a few units in the last place per rank.
CheckResult checkOutput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay,
                        const void* hostRecv);
// The same for output elements r.begin .. r.end - 1, held in `host` from host[0]; firstWrong counts from 0 of the
// whole buffer. Pieces add up with addPiece.
CheckResult checkOutput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay, const void* host,
                        ElementRange r);
void addPiece(CheckResult& whole, const CheckResult& piece);

}  // namespace ts
