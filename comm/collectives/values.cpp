#include "comm/collectives/values.h"

#include <algorithm>
#include <cmath>

namespace ts {

double reductionInput(RedOp op, int rank, std::size_t i) {
  const auto r = static_cast<std::size_t>(rank);
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      return static_cast<double>((r * 7 + i * 3) % 4);  // 0..3
    case RedOp::kProd:
      return (i % 3 == 0 && (i / 3) % 16 == r % 16) ? 2 : 1;  // at most a few 2s per element
    case RedOp::kMin:
    case RedOp::kMax:
      return static_cast<double>((r * 5 + i) % 11);  // 0..10
  }
  return 0;
}

double movedInput(int rank, std::size_t i) {
  return static_cast<double>((static_cast<std::size_t>(rank) * 31 + i) % 97);  // 0..96: exact in every dtype
}

double reducedValue(RedOp op, DType t, int nranks, std::size_t i) {
  double acc = reductionInput(op, 0, i);
  for (int r = 1; r < nranks; ++r) {
    const double x = reductionInput(op, r, i);
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg:
        acc += x;
        break;
      case RedOp::kProd:
        acc *= x;
        break;
      case RedOp::kMin:
        acc = std::min(acc, x);
        break;
      case RedOp::kMax:
        acc = std::max(acc, x);
        break;
    }
  }
  if (op == RedOp::kAvg) acc = dtypeIsFloat(t) ? acc / nranks : std::trunc(acc / nranks);
  return acc;
}

}  // namespace ts
