// scatter: rank r ends with block r of the root's buffer (declared in the result schema).
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class Scatter final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    return movedInput(a.root, rank * lay.count + i);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {true, rank * lay.count}; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    const int n = mpiCount(c.count);
    void* r = c.recv;
    if (m.rank == c.root && c.recv == offsetBytes(c.send, c.count * m.rank, c.dtype)) r = MPI_IN_PLACE;
    MPI_CHECK(MPI_Scatter(c.send, n, mpiType(c.dtype), r, n, mpiType(c.dtype), c.root, m.comm));
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclScatter(c.send, c.recv, c.count, ncclType(c.dtype), c.root, n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(scatter, Scatter)
}  // namespace ts
