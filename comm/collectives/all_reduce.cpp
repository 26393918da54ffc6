// all_reduce: every rank ends with the reduction of all ranks' buffers.
// Bus factor 2(n-1)/n: a ring reduce-scatter then all-gather moves each byte over 2(n-1)/n links.
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class AllReduce final : public Collective {
 public:
  std::string_view name() const override { return "all_reduce"; }
  bool reduces() const override { return true; }
  BufferShape shape() const override { return BufferShape::kFlat; }
  double busFactor(int n) const override { return 2.0 * ringFactor(n); }
  double input(const CollectiveArgs& a, int rank, std::size_t i) const override { return reductionInput(a.redop, rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int, std::size_t i, const CollectiveLayout&) const override {
    return reducedValue(a.redop, a.dtype, a.nranks, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    MPI_CHECK(MPI_Allreduce(inPlaceOr(c.send, c.recv), c.recv, mpiCount(c.count), mpiType(c.dtype), mpiOp(c.redop), m.comm));
    finishAverage(c.recv, c.count, c.dtype, c.redop, m.size);
  }
  bool startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>&) const override {
    if (c.redop == RedOp::kAvg) return false;  // the division needs the result
    MPI_CHECK(MPI_Iallreduce(inPlaceOr(c.send, c.recv), c.recv, mpiCount(c.count), mpiType(c.dtype), mpiOp(c.redop), m.comm,
                             &req.handle));
    return true;
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclAllReduce(c.send, c.recv, c.count, ncclType(c.dtype), ncclOp(c.redop), n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(all_reduce, AllReduce)
}  // namespace ts
