// sendrecv: a ring shift; rank r sends its buffer to r+1 and receives r-1's. Bus factor 1: every link
// carries the buffer once, in one direction.
#include "comm/collectives/collective.h"
#include "comm/collectives/values.h"

namespace ts {
namespace {
class SendRecv final : public Collective {
 public:
  std::string_view name() const override { return "sendrecv"; }
  CollectiveKind kind() const override { return CollectiveKind::kSendRecv; }
  BufferShape shape() const override { return BufferShape::kFlat; }
  double busFactor(int) const override { return 1.0; }
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout&) const override {
    return movedInput((rank - 1 + a.nranks) % a.nranks, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  void launch(Communicator& c, int l, const void* s, void* r, const CollectiveLayout& lay,
              const CollectiveArgs& a) const override {
    const int me = c.rank(l);
    c.sendRecv(l, s, r, lay.count, a.dtype, (me + 1) % a.nranks, (me - 1 + a.nranks) % a.nranks);
  }
};
}  // namespace
const Collective& sendRecvCollective() {
  static const SendRecv c;
  return c;
}
}  // namespace ts
