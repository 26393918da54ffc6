// all_reduce: every rank ends with the reduction of all ranks' buffers.
// Bus factor 2(n-1)/n: a ring reduce-scatter then all-gather moves each byte over 2(n-1)/n links.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class AllReduce final : public Collective {
 public:
  std::string_view name() const override { return "all_reduce"; }
  CollectiveKind kind() const override { return CollectiveKind::kAllReduce; }
  bool reduces() const override { return true; }
  BufferShape shape() const override { return BufferShape::kFlat; }
  double busFactor(int n) const override { return 2.0 * ringFactor(n); }
  double input(const CollectiveArgs& a, int rank, std::size_t i) const override { return reductionInput(a.redop, rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int, std::size_t i, const CollectiveLayout&) const override {
    return reducedValue(a.redop, a.dtype, a.nranks, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.allReduce(l, s, r, lay.count, a.dtype, a.redop);
  }
};
}  // namespace
const Collective& allReduceCollective() {
  static const AllReduce c;
  return c;
}
}  // namespace ts
