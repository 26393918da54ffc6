// reduce: the root ends with the reduction of all ranks' buffers; other ranks' outputs are undefined
// (declared in the result schema).
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class Reduce final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs& a, int rank, std::size_t i) const override { return reductionInput(a.redop, rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout&) const override {
    if (rank != a.root) return std::nullopt;
    return reducedValue(a.redop, a.dtype, a.nranks, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    MPI_CHECK(MPI_Reduce(sendBuffer(m, c), c.recv, mpiCount(c.count), mpiType(c.dtype), mpiOp(c.redop), c.root, m.comm));
    if (m.rank == c.root) finishAverage(c.recv, c.count, c.dtype, c.redop, m.size);
  }
  bool startsOnMpi() const override { return true; }
  void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>& finish) const override {
    MPI_CHECK(
        MPI_Ireduce(sendBuffer(m, c), c.recv, mpiCount(c.count), mpiType(c.dtype), mpiOp(c.redop), c.root, m.comm, &req.handle));
    if (c.redop == RedOp::kAvg && m.rank == c.root)
      finish = [c, n = m.size] { finishAverage(c.recv, c.count, c.dtype, c.redop, n); };
  }
  static const void* sendBuffer(const MpiCall& m, const CollectiveCall& c) {
    return m.rank == c.root ? inPlaceOr(c.send, c.recv) : c.send;
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclReduce(c.send, c.recv, c.count, ncclType(c.dtype), ncclOp(c.redop), c.root, n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(reduce, Reduce)
}  // namespace ts
