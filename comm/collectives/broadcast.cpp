// broadcast: every rank ends with the root's buffer. Bus factor 1: a pipelined chain moves each byte once per link.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class Broadcast final : public Collective {
 public:
  std::string_view name() const override { return "broadcast"; }
  CollectiveKind kind() const override { return CollectiveKind::kBroadcast; }
  bool rooted() const override { return true; }
  BufferShape shape() const override { return BufferShape::kFlat; }
  double busFactor(int) const override { return 1.0; }
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int, std::size_t i, const CollectiveLayout&) const override {
    return movedInput(a.root, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    c.broadcast(l, s, r, lay.count, a.dtype, a.root);
  }
};
}  // namespace
const Collective& broadcastCollective() {
  static const Broadcast c;
  return c;
}
}  // namespace ts
