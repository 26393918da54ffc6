// reduce_scatter: the reduction of all ranks' whole buffers, rank r keeping block r.
// Bytes are the whole input buffer; bus factor (n-1)/n.
#include <cstring>

#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
class ReduceScatter final : public Collective {
 public:
  std::string_view name() const override { return "reduce_scatter"; }
  bool reduces() const override { return true; }
  BufferShape shape() const override { return BufferShape::kScattered; }
  double busFactor(int n) const override { return ringFactor(n); }
  double input(const CollectiveArgs& a, int rank, std::size_t i) const override { return reductionInput(a.redop, rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    return reducedValue(a.redop, a.dtype, a.nranks, rank * lay.count + i);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {true, rank * lay.count}; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    const int n = mpiCount(c.count);
    char* mine = offsetBytes(const_cast<void*>(c.send), c.count * m.rank, c.dtype);
    if (c.recv == mine) {
      // MPI's in-place result lands at the start of the buffer; NCCL's (our contract) at this rank's block.
      MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<void*>(c.send), n, mpiType(c.dtype), mpiOp(c.redop), m.comm));
      if (m.rank != 0) std::memmove(mine, c.send, c.count * dtypeSize(c.dtype));
    } else {
      MPI_CHECK(MPI_Reduce_scatter_block(c.send, c.recv, n, mpiType(c.dtype), mpiOp(c.redop), m.comm));
    }
    finishAverage(c.recv, c.count, c.dtype, c.redop, m.size);
  }
  bool startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>& finish) const override {
    if (c.redop == RedOp::kAvg) return false;  // the division needs the result: that runs blocking
    char* mine = offsetBytes(const_cast<void*>(c.send), c.count * m.rank, c.dtype);
    const bool inPlace = c.recv == mine;
    MPI_CHECK(MPI_Ireduce_scatter_block(inPlace ? MPI_IN_PLACE : c.send, inPlace ? const_cast<void*>(c.send) : c.recv,
                                        mpiCount(c.count), mpiType(c.dtype), mpiOp(c.redop), m.comm, &req.handle));
    // In place, as in runMpi: MPI's result lands at the start of the buffer, ours belongs at this rank's block
    // (the ZeRO layouts reduce-scatter their buckets in place while the backward goes on).
    if (inPlace && m.rank != 0)
      finish = [mine, start = c.send, bytes = c.count * dtypeSize(c.dtype)] { std::memmove(mine, start, bytes); };
    return true;
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclReduceScatter(c.send, c.recv, c.count, ncclType(c.dtype), ncclOp(c.redop), n.comm, n.stream));
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(reduce_scatter, ReduceScatter)
}  // namespace ts
