// gather: the root ends with every rank's block, rank q's at q*count.
// Bytes are the whole gathered buffer; bus factor (n-1)/n: the root's link receives the n-1 other blocks.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class Gather final : public Collective {
 public:
  std::string_view name() const override { return "gather"; }
  CollectiveKind kind() const override { return CollectiveKind::kGather; }
  bool rooted() const override { return true; }
  BufferShape shape() const override { return BufferShape::kGathered; }
  double busFactor(int n) const override { return ringFactor(n); }
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    if (rank != a.root) return std::nullopt;
    return movedInput(static_cast<int>(i / lay.count), i % lay.count);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {false, rank * lay.count}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.gather(l, s, r, lay.count, a.dtype, a.root);
  }
};
}  // namespace
const Collective& gatherCollective() {
  static const Gather c;
  return c;
}
}  // namespace ts
