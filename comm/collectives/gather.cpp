// gather: the root ends with every rank's block, rank q's at q*count (declared in the result schema).
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class Gather final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    if (rank != a.root) return std::nullopt;
    return movedInput(static_cast<int>(i / lay.count), i % lay.count);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {false, rank * lay.count}; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    const int n = mpiCount(c.count);
    const void* s = m.rank == c.root ? inPlaceOr(c.send, offsetBytes(c.recv, c.count * m.rank, c.dtype)) : c.send;
    MPI_CHECK(MPI_Gather(s, n, mpiType(c.dtype), c.recv, n, mpiType(c.dtype), c.root, m.comm));
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclGather(c.send, c.recv, c.count, ncclType(c.dtype), c.root, n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(gather, Gather)
}  // namespace ts
