// alltoall: rank r sends block q of its buffer to rank q and receives rank q's block r at q*count.
// Bytes are the whole buffer; bus factor (n-1)/n: all but the block kept locally crosses a link.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class AllToAll final : public Collective {
 public:
  std::string_view name() const override { return "alltoall"; }
  CollectiveKind kind() const override { return CollectiveKind::kAllToAll; }
  BufferShape shape() const override { return BufferShape::kExchanged; }
  double busFactor(int n) const override { return ringFactor(n); }
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs&, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    return movedInput(static_cast<int>(i / lay.count), rank * lay.count + i % lay.count);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.allToAll(l, s, r, lay.count, a.dtype);
  }
};
}  // namespace
const Collective& allToAllCollective() {
  static const AllToAll c;
  return c;
}
}  // namespace ts
