// reduce: the root ends with the reduction of all ranks' buffers; other ranks' outputs are undefined.
// Bus factor 1.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class Reduce final : public Collective {
 public:
  std::string_view name() const override { return "reduce"; }
  CollectiveKind kind() const override { return CollectiveKind::kReduce; }
  bool reduces() const override { return true; }
  bool rooted() const override { return true; }
  BufferShape shape() const override { return BufferShape::kFlat; }
  double busFactor(int) const override { return 1.0; }
  double input(const CollectiveArgs& a, int rank, std::size_t i) const override { return reductionInput(a.redop, rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout&) const override {
    if (rank != a.root) return std::nullopt;
    return reducedValue(a.redop, a.dtype, a.nranks, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.reduce(l, s, r, lay.count, a.dtype, a.redop, a.root);
  }
};
}  // namespace
const Collective& reduceCollective() {
  static const Reduce c;
  return c;
}
}  // namespace ts
