#include "comm/collectives/check.h"

#include <algorithm>
#include <cmath>

namespace ts {
namespace {

double epsilonOf(DType t) {
  switch (t) {
    case DType::kFloat16:
      return 0x1p-10;
    case DType::kBFloat16:
      return 0x1p-7;
    case DType::kFloat32:
      return 0x1p-23;
    case DType::kFloat64:
      return 0x1p-52;
    default:
      return 0;
  }
}

// The expected value as the dtype can hold it (integers wrap, floats round).
double representable(double v, DType t) {
  unsigned char buf[8];
  storeElement(buf, t, 0, v);
  return loadElement(buf, t, 0);
}

}  // namespace

void fillInput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay, void* hostSend) {
  fillInput(c, a, rank, lay, hostSend, {0, lay.sendElems});
}

void fillInput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout&, void* host, ElementRange r) {
  for (std::size_t i = r.begin; i < r.end; ++i) storeElement(host, a.dtype, i - r.begin, c.input(a, rank, i));
}

CheckResult checkOutput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay,
                        const void* hostRecv) {
  return checkOutput(c, a, rank, lay, hostRecv, {0, lay.recvElems});
}

CheckResult checkOutput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay, const void* host,
                        ElementRange r) {
  CheckResult res;
  const bool approx = c.reduces() && a.redop == RedOp::kAvg && dtypeIsFloat(a.dtype);
  const double tolUlps = 2.0 * a.nranks * epsilonOf(a.dtype);
  for (std::size_t i = r.begin; i < r.end; ++i) {
    const auto want = c.expected(a, rank, i, lay);
    if (!want) continue;
    const double expect = representable(*want, a.dtype);
    const double got = loadElement(host, a.dtype, i - r.begin);
    ++res.checked;
    const bool ok = approx ? std::fabs(got - expect) <= tolUlps * std::max(1.0, std::fabs(expect)) : got == expect;
    if (!ok) {
      if (res.wrong == 0) {
        res.firstWrong = i;
        res.firstGot = got;
        res.firstExpected = expect;
      }
      ++res.wrong;
    }
  }
  return res;
}

void addPiece(CheckResult& whole, const CheckResult& piece) {
  if (whole.wrong == 0 && piece.wrong > 0) {
    whole.firstWrong = piece.firstWrong;
    whole.firstGot = piece.firstGot;
    whole.firstExpected = piece.firstExpected;
  }
  whole.checked += piece.checked;
  whole.wrong += piece.wrong;
}

}  // namespace ts
