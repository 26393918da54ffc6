// alltoall: rank r sends block q of its buffer to rank q and receives rank q's block r at q*count (declared
// in the result schema).
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class AllToAll final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs&, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    return movedInput(static_cast<int>(i / lay.count), rank * lay.count + i % lay.count);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  bool ncclInPlace() const override { return false; }  // ncclAlltoAll defines no in-place form
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    const int n = mpiCount(c.count);
    MPI_CHECK(MPI_Alltoall(inPlaceOr(c.send, c.recv), n, mpiType(c.dtype), c.recv, n, mpiType(c.dtype), m.comm));
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclAlltoAll(c.send, c.recv, c.count, ncclType(c.dtype), n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(alltoall, AllToAll)
}  // namespace ts
