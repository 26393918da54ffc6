// sendrecv: a ring shift; rank r sends its buffer to r+1 and receives r-1's (declared in the result schema).
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class SendRecv final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout&) const override {
    return movedInput((rank - 1 + a.nranks) % a.nranks, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  // Sends to the next rank (the call's root field), receives from the previous one (its peer).
  CollectiveCall call(int rank, const void* s, void* r, const CollectiveLayout& lay, const CollectiveArgs& a) const override {
    return {this, s, r, lay.count, a.dtype, a.redop, (rank + 1) % a.nranks, (rank - 1 + a.nranks) % a.nranks};
  }
  bool ncclInPlace() const override { return false; }  // a send and a receive of one buffer would race
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    constexpr int kTag = 7;
    const int n = mpiCount(c.count);
    if (c.send == c.recv)
      MPI_CHECK(MPI_Sendrecv_replace(c.recv, n, mpiType(c.dtype), c.root, kTag, c.peer, kTag, m.comm, MPI_STATUS_IGNORE));
    else
      MPI_CHECK(MPI_Sendrecv(c.send, n, mpiType(c.dtype), c.root, kTag, c.recv, n, mpiType(c.dtype), c.peer, kTag, m.comm,
                             MPI_STATUS_IGNORE));
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclGroupStart());
    NCCL_CHECK(ncclSend(c.send, c.count, ncclType(c.dtype), c.root, n.comm, n.stream));
    NCCL_CHECK(ncclRecv(c.recv, c.count, ncclType(c.dtype), c.peer, n.comm, n.stream));
    NCCL_CHECK(ncclGroupEnd());
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(sendrecv, SendRecv)
}  // namespace ts
