#include "comm/collectives/check.h"

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
  for (std::size_t i = 0; i < lay.sendElems; ++i) storeElement(hostSend, a.dtype, i, c.input(a, rank, i));
}

CheckResult checkOutput(const Collective& c, const CollectiveArgs& a, int rank, const CollectiveLayout& lay,
                        const void* hostRecv) {
  CheckResult res;
  const bool approx = c.reduces() && a.redop == RedOp::kAvg && dtypeIsFloat(a.dtype);
  const double tolUlps = 2.0 * a.nranks * epsilonOf(a.dtype);
  for (std::size_t i = 0; i < lay.recvElems; ++i) {
    const auto want = c.expected(a, rank, i, lay);
    if (!want) continue;
    const double expect = representable(*want, a.dtype);
    const double got = loadElement(hostRecv, a.dtype, i);
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

}  // namespace ts
