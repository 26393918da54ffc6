// broadcast: every rank ends with the root's buffer (declared in the result schema).
#include <cstring>

#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class Broadcast final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int, std::size_t i, const CollectiveLayout&) const override {
    return movedInput(a.root, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
#ifdef TRAINSCOPE_HAVE_MPI
  // Out of place, the root sends from its send buffer and the others receive into their receive buffer;
  // the root's copy into its own receive buffer is finishMpi's, outside the timed region.
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    MPI_CHECK(MPI_Bcast(buffer(m, c), mpiCount(c.count), mpiType(c.dtype), c.root, m.comm));
  }
  void finishMpi(const MpiCall& m, const CollectiveCall& c) const override {
    if (m.rank == c.root && c.send != c.recv) std::memcpy(c.recv, c.send, c.count * dtypeSize(c.dtype));
  }
  bool startsOnMpi() const override { return true; }
  void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>& finish) const override {
    MPI_CHECK(MPI_Ibcast(buffer(m, c), mpiCount(c.count), mpiType(c.dtype), c.root, m.comm, &req.handle));
    finish = [this, m, c] { finishMpi(m, c); };
  }
  static void* buffer(const MpiCall& m, const CollectiveCall& c) { return m.rank == c.root ? const_cast<void*>(c.send) : c.recv; }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclBroadcast(c.send, c.recv, c.count, ncclType(c.dtype), c.root, n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(broadcast, Broadcast)
}  // namespace ts
