// reduce_scatter: the reduction of all ranks' whole buffers, rank r keeping block r.
// Bytes are the whole input buffer; bus factor (n-1)/n.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class ReduceScatter final : public Collective {
 public:
  std::string_view name() const override { return "reduce_scatter"; }
  CollectiveKind kind() const override { return CollectiveKind::kReduceScatter; }
  bool reduces() const override { return true; }
  BufferShape shape() const override { return BufferShape::kScattered; }
  double busFactor(int n) const override { return ringFactor(n); }
  double input(const CollectiveArgs& a, int rank, std::size_t i) const override { return reductionInput(a.redop, rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    return reducedValue(a.redop, a.dtype, a.nranks, rank * lay.count + i);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {true, rank * lay.count}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.reduceScatter(l, s, r, lay.count, a.dtype, a.redop);
  }
};
}  // namespace
const Collective& reduceScatterCollective() {
  static const ReduceScatter c;
  return c;
}
}  // namespace ts
