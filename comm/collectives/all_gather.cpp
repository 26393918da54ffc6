// all_gather: every rank ends with all ranks' blocks, rank q's at q*count (declared in the result schema).
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class AllGather final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs&, int, std::size_t i, const CollectiveLayout& lay) const override {
    return movedInput(static_cast<int>(i / lay.count), i % lay.count);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {false, rank * lay.count}; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    const int n = mpiCount(c.count);
    MPI_CHECK(MPI_Allgather(mine(m, c), n, mpiType(c.dtype), c.recv, n, mpiType(c.dtype), m.comm));
  }
  bool startsOnMpi() const override { return true; }
  void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>&) const override {
    const int n = mpiCount(c.count);
    MPI_CHECK(MPI_Iallgather(mine(m, c), n, mpiType(c.dtype), c.recv, n, mpiType(c.dtype), m.comm, &req.handle));
  }
  // In place, this rank's block already sits at its place in the receive buffer.
  static const void* mine(const MpiCall& m, const CollectiveCall& c) {
    return inPlaceOr(c.send, offsetBytes(c.recv, c.count * m.rank, c.dtype));
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclAllGather(c.send, c.recv, c.count, ncclType(c.dtype), n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(all_gather, AllGather)
}  // namespace ts
