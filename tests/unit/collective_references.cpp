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
      {"gather", [](const Buffers& in, const CollectiveArgs& a, std::size_t k, int r,
                    std::size_t i) { return r == a.root ? in[i / k][i % k] : NAN; }},
      {"scatter",
       [](const Buffers& in, const CollectiveArgs& a, std::size_t k, int r, std::size_t i) { return in[a.root][r * k + i]; }},
      {"sendrecv", [](const Buffers& in, const CollectiveArgs& a, std::size_t, int r,
                      std::size_t i) { return in[(r + a.nranks - 1) % a.nranks][i]; }},
  };
  return all;
}

const CollectiveReference* findReference(std::string_view name) {
  for (const auto& ref : collectiveReferences())
    if (ref.name == name) return &ref;
  return nullptr;
}

}  // namespace ts::test
