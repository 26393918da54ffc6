// all_gather: every rank ends with all ranks' blocks, rank q's at q*count.
// Bytes are the whole gathered buffer; bus factor (n-1)/n: each rank receives the n-1 blocks it lacks.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class AllGather final : public Collective {
 public:
  std::string_view name() const override { return "all_gather"; }
  CollectiveKind kind() const override { return CollectiveKind::kAllGather; }
  BufferShape shape() const override { return BufferShape::kGathered; }
  double busFactor(int n) const override { return ringFactor(n); }
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs&, int, std::size_t i, const CollectiveLayout& lay) const override {
    return movedInput(static_cast<int>(i / lay.count), i % lay.count);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {false, rank * lay.count}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.allGather(l, s, r, lay.count, a.dtype);
  }
};
}  // namespace
const Collective& allGatherCollective() {
  static const AllGather c;
  return c;
}
}  // namespace ts
