// all_reduce: every rank ends with the reduction of all ranks' buffers (declared, with its shape and bus
// factor, in reports/schema/result-v1.schema.json).
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class AllReduce final : public Collective {
 public:
  using Collective::Collective;
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
  bool startsOnMpi() const override { return true; }
  void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>& finish) const override {
    MPI_CHECK(MPI_Iallreduce(inPlaceOr(c.send, c.recv), c.recv, mpiCount(c.count), mpiType(c.dtype), mpiOp(c.redop), m.comm,
                             &req.handle));
    if (c.redop == RedOp::kAvg) finish = [c, n = m.size] { finishAverage(c.recv, c.count, c.dtype, c.redop, n); };
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
