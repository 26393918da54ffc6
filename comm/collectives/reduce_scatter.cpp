// reduce_scatter: the reduction of all ranks' whole buffers, rank r keeping block r (declared in the result
// schema).
#include <cstring>
#include <vector>

#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
#ifdef TRAINSCOPE_HAVE_MPI
// MPI's in-place result lands at the start of the buffer; NCCL's (our contract) at this rank's block,
// where it is moved once the call completes.
struct Buffers {
  const void* send;  // or MPI_IN_PLACE
  void* recv;
  char* mine;  // this rank's block of the send buffer
  bool moveToMine;
};
Buffers buffers(const MpiCall& m, const CollectiveCall& c) {
  char* mine = offsetBytes(const_cast<void*>(c.send), c.count * m.rank, c.dtype);
  if (c.recv != mine) return {c.send, c.recv, mine, false};
  return {MPI_IN_PLACE, const_cast<void*>(c.send), mine, m.rank != 0};
}
// Why counts (MPI_Reduce_scatter) is the default call (kDefaultMpiReduceScatter, comm/communicator.h):
// measured with `collectives --ops reduce_scatter` at 2 ranks on a 2-core VM (Open MPI 4.1.4, shared memory,
// load 3-13 from other builds), 6 runs per call interleaved, median time in us out of place, block / counts:
//   256 KiB 72 / 29, 1 MiB 516 / 162, 4 MiB 23130 / 11323, 16 MiB 73826 / 33575, 32 MiB 130206 / 119345,
//   64 MiB 252728 / 271632
// (in place alike). counts is 2-13x faster up to 16 MiB (block is a reduce and a scatter through a
// temporary of the whole buffer, allocated per call) and a little faster at 32 MiB. At 64 MiB it takes 5-27%
// longer (three rounds of runs): there both calls' temporaries are past glibc's mmap threshold and fault in
// on every call, counts' more (about 49k minor faults per call against 17k; with MALLOC_MMAP_THRESHOLD_ and
// MALLOC_TRIM_THRESHOLD_ raised, one run each, faults fell 4-8x and counts was the faster there too).
// Nonblocking (the ZeRO layouts' calls, libnbc) the two are within noise of each other at every size.
// The MPI call c.mpiReduceScatter names, nonblocking when `request` is given. `counts` holds the receive
// counts of MPI_(I)reduce_scatter: the caller keeps it until the request completes.
void issue(const MpiCall& m, const CollectiveCall& c, const Buffers& b, std::vector<int>& counts, MPI_Request* request) {
  const int n = mpiCount(c.count);
  const MPI_Datatype t = mpiType(c.dtype);
  const MPI_Op op = mpiOp(c.redop);
  switch (c.mpiReduceScatter) {
    case MpiReduceScatter::kBlock:
      if (request)
        MPI_CHECK(MPI_Ireduce_scatter_block(b.send, b.recv, n, t, op, m.comm, request));
      else
        MPI_CHECK(MPI_Reduce_scatter_block(b.send, b.recv, n, t, op, m.comm));
      return;
    case MpiReduceScatter::kCounts:
      counts.assign(static_cast<std::size_t>(m.size), n);
      if (request)
        MPI_CHECK(MPI_Ireduce_scatter(b.send, b.recv, counts.data(), t, op, m.comm, request));
      else
        MPI_CHECK(MPI_Reduce_scatter(b.send, b.recv, counts.data(), t, op, m.comm));
      return;
  }
}
#endif

class ReduceScatter final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs& a, int rank, std::size_t i) const override { return reductionInput(a.redop, rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    return reducedValue(a.redop, a.dtype, a.nranks, rank * lay.count + i);
  }
  InPlaceGeometry inPlace(int rank, const CollectiveLayout& lay) const override { return {true, rank * lay.count}; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    const Buffers b = buffers(m, c);
    std::vector<int> counts;
    issue(m, c, b, counts, nullptr);
    if (b.moveToMine) std::memmove(b.mine, c.send, c.count * dtypeSize(c.dtype));
    finishAverage(c.recv, c.count, c.dtype, c.redop, m.size);
  }
  bool startsOnMpi() const override { return true; }
  void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>& finish) const override {
    const Buffers b = buffers(m, c);
    issue(m, c, b, req.counts, &req.handle);
    // The ZeRO layouts reduce-scatter their buckets in place while the backward goes on; the block moves to this
    // rank's place, then (avg) the sum there is divided, as runMpi does.
    if (b.moveToMine || c.redop == RedOp::kAvg)
      finish = [b, c, n = m.size] {
        if (b.moveToMine) std::memmove(b.mine, c.send, c.count * dtypeSize(c.dtype));
        finishAverage(c.recv, c.count, c.dtype, c.redop, n);
      };
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
