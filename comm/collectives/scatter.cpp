// scatter: rank r ends with block r of the root's buffer.
// Bytes are the root's whole buffer; bus factor (n-1)/n: the root's link sends the n-1 other blocks.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class Scatter final : public Collective {
 public:
  std::string_view name() const override { return "scatter"; }
  CollectiveKind kind() const override { return CollectiveKind::kScatter; }
  bool rooted() const override { return true; }
  BufferShape shape() const override { return BufferShape::kScattered; }
  double busFactor(int n) const override { return ringFactor(n); }
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    return movedInput(a.root, rank * lay.count + i);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {true, rank * lay.count}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.scatter(l, s, r, lay.count, a.dtype, a.root);
  }
};
}  // namespace
const Collective& scatterCollective() {
  static const Scatter c;
  return c;
}
}  // namespace ts
