// alltoallv: an all-to-all with per-pair counts (declared in the result schema). Rank s sends weight(s, d) x count
// elements to rank d (CollectiveArgs::exchange, --alltoallv-counts): its blocks to ranks 0..n-1 packed at the start of
// its send buffer, and rank d's blocks from ranks 0..n-1 packed at the start of its receive buffer, as MPI_Alltoallv's
// displacements and a MoE dispatch lay them out (exchange_matrix.h). Both buffers are sized for the busiest rank; what
// lies past a rank's own blocks is defined by nothing and left as it was.
#include <cstdint>
#include <vector>

#include "comm/collectives/collective_file.h"

namespace ts {
namespace {

#ifdef TRAINSCOPE_HAVE_MPI
// MPI_(I)alltoallv's four arrays for rank m.rank, in `into` (sendcounts, sdispls, recvcounts, rdispls, n each), which
// the caller keeps until a nonblocking call completes.
void mpiCounts(const MpiCall& m, const CollectiveCall& c, std::vector<int>& into) {
  const ExchangeMatrix& x = *c.exchange;
  const auto n = static_cast<std::size_t>(m.size);
  into.assign(4 * n, 0);
  for (int p = 0; p < m.size; ++p) {
    const auto q = static_cast<std::size_t>(p);
    into[q] = mpiCount(x.weight(m.rank, p) * c.count);
    into[n + q] = mpiCount(x.sendOffset(m.rank, p) * c.count);
    into[2 * n + q] = mpiCount(x.weight(p, m.rank) * c.count);
    into[3 * n + q] = mpiCount(x.recvOffset(m.rank, p) * c.count);
  }
}
#endif

class AllToAllV final : public Collective {
 public:
  using Collective::Collective;
  bool perPairCounts() const override { return true; }
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  // Element i of rank d's receive buffer: within its block from the sender s whose block holds i, the element of s's
  // block to d at the same place.
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    const ExchangeMatrix& x = exchangeOf(a);
    const std::uint64_t k = lay.count;
    for (int s = 0; s < x.ranks(); ++s) {
      const std::uint64_t begin = x.recvOffset(rank, s) * k, end = begin + x.weight(s, rank) * k;
      if (i >= begin && i < end) return movedInput(s, x.sendOffset(s, rank) * k + (i - begin));
    }
    return std::nullopt;  // past this rank's blocks
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  CollectiveCall call(int rank, const void* s, void* r, const CollectiveLayout& lay, const CollectiveArgs& a) const override {
    CollectiveCall c = Collective::call(rank, s, r, lay, a);
    c.exchange = &exchangeOf(a);
    return c;
  }
  // Neither backend is measured in place. NCCL has no in-place form of its grouped sends and receives; MPI_IN_PLACE
  // sends each block from where the same peer's block arrives, so it needs weight(s, d) == weight(d, s), which the
  // skewed and routed patterns this op exists for are not (nccl-tests measures alltoallv out of place only too).
  bool ncclInPlace() const override { return false; }
  bool mpiInPlace() const override { return false; }
#ifdef TRAINSCOPE_HAVE_MPI
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    std::vector<int> v;
    mpiCounts(m, c, v);
    const auto n = static_cast<std::size_t>(m.size);
    const MPI_Datatype t = mpiType(c.dtype);
    MPI_CHECK(MPI_Alltoallv(c.send, v.data(), v.data() + n, t, c.recv, v.data() + 2 * n, v.data() + 3 * n, t, m.comm));
  }
  bool startsOnMpi() const override { return true; }
  void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>&) const override {
    mpiCounts(m, c, req.counts);
    const auto n = static_cast<std::size_t>(m.size);
    const MPI_Datatype t = mpiType(c.dtype);
    int* v = req.counts.data();
    MPI_CHECK(MPI_Ialltoallv(c.send, v, v + n, t, c.recv, v + 2 * n, v + 3 * n, t, m.comm, &req.handle));
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  // As nccl-tests and PyTorch issue an uneven all-to-all: a send and a receive per peer in one group, a zero block
  // neither (both sides skip it, as both know the matrix).
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    const ExchangeMatrix& x = *c.exchange;
    int me = 0;
    NCCL_CHECK(ncclCommUserRank(n.comm, &me));
    const std::size_t elt = dtypeSize(c.dtype);
    const char* send = static_cast<const char*>(c.send);
    char* recv = static_cast<char*>(c.recv);
    NCCL_CHECK(ncclGroupStart());
    for (int p = 0; p < x.ranks(); ++p) {
      if (const std::size_t out = x.weight(me, p) * c.count; out > 0)
        NCCL_CHECK(ncclSend(send + x.sendOffset(me, p) * c.count * elt, out, ncclType(c.dtype), p, n.comm, n.stream));
      if (const std::size_t in = x.weight(p, me) * c.count; in > 0)
        NCCL_CHECK(ncclRecv(recv + x.recvOffset(me, p) * c.count * elt, in, ncclType(c.dtype), p, n.comm, n.stream));
    }
    NCCL_CHECK(ncclGroupEnd());
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(alltoallv, AllToAllV)
}  // namespace ts
