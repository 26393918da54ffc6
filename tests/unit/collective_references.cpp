#include "collective_references.h"

#include <algorithm>
#include <cmath>

namespace ts::test {
namespace {

// The reduction of element i over all ranks, as the op and dtype define it (an integer average truncates).
double reduced(const Buffers& in, const CollectiveArgs& a, std::size_t i) {
  double acc = in[0][i];
  for (std::size_t r = 1; r < in.size(); ++r) {
    const double x = in[r][i];
    if (a.redop == RedOp::kSum || a.redop == RedOp::kAvg) acc += x;
    if (a.redop == RedOp::kProd) acc *= x;
    if (a.redop == RedOp::kMin) acc = std::min(acc, x);
    if (a.redop == RedOp::kMax) acc = std::max(acc, x);
  }
  const double n = static_cast<double>(in.size());
  if (a.redop == RedOp::kAvg) acc = dtypeIsFloat(a.dtype) ? acc / n : std::trunc(acc / n);
  return acc;
}

// alltoallv: element i of rank r's output, walking the senders' blocks in rank order with the weights alone (no
// offsets of the matrix's own), each unit k elements; NaN past r's blocks.
double exchanged(const Buffers& in, const CollectiveArgs& a, std::size_t k, int r, std::size_t i) {
  const ExchangeMatrix& m = exchangeOf(a);
  std::size_t at = 0;  // where sender s's block starts in r's output
  for (int s = 0; s < a.nranks; ++s) {
    const std::size_t len = m.weight(s, r) * k;
    if (i < at + len) {
      std::size_t from = 0;  // where s's block to r starts in its input
      for (int d = 0; d < r; ++d) from += m.weight(s, d) * k;
      return in[s][from + (i - at)];
    }
    at += len;
  }
  return NAN;
}

}  // namespace

const std::vector<CollectiveReference>& collectiveReferences() {
  static const std::vector<CollectiveReference> all = {
      {"all_reduce",
       [](const Buffers& in, const CollectiveArgs& a, std::size_t, int, std::size_t i) { return reduced(in, a, i); }},
      {"all_gather",
       [](const Buffers& in, const CollectiveArgs&, std::size_t k, int, std::size_t i) { return in[i / k][i % k]; }},
      {"reduce_scatter",
       [](const Buffers& in, const CollectiveArgs& a, std::size_t k, int r, std::size_t i) { return reduced(in, a, r * k + i); }},
      {"broadcast", [](const Buffers& in, const CollectiveArgs& a, std::size_t, int, std::size_t i) { return in[a.root][i]; }},
      {"reduce", [](const Buffers& in, const CollectiveArgs& a, std::size_t, int r,
                    std::size_t i) { return r == a.root ? reduced(in, a, i) : NAN; }},
      {"alltoall",
       [](const Buffers& in, const CollectiveArgs&, std::size_t k, int r, std::size_t i) { return in[i / k][r * k + i % k]; }},
      {"alltoallv", exchanged},
      {"gather", [](const Buffers& in, const CollectiveArgs& a, std::size_t k, int r,
                    std::size_t i) { return r == a.root ? in[i / k][i % k] : NAN; }},
      {"scatter",
       [](const Buffers& in, const CollectiveArgs& a, std::size_t k, int r, std::size_t i) { return in[a.root][r * k + i]; }},
      {"sendrecv", [](const Buffers& in, const CollectiveArgs& a, std::size_t, int r,
                      std::size_t i) { return in[(r + a.nranks - 1) % a.nranks][i]; }},
      {"send", [](const Buffers& in, const CollectiveArgs&, std::size_t, int r,
                  std::size_t i) { return r % 2 == 1 ? in[r - 1][i] : NAN; }},
  };
  return all;
}

const CollectiveReference* findReference(std::string_view name) {
  for (const auto& ref : collectiveReferences())
    if (ref.name == name) return &ref;
  return nullptr;
}

}  // namespace ts::test
