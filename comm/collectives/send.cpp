// send: one direction per pair; each even rank r sends its buffer to r + 1, which receives it (declared in the result
// schema). What a pipeline stage's activation or a parameter server's shard is: one message one way, where sendrecv
// (a ring shift) loads both directions of a link at once (at 2 ranks an exchange), which a shaped or half-duplex link
// serves at up to half the rate. An odd world's last rank takes no part.
#include "comm/collectives/collective_file.h"

namespace ts {
namespace {
constexpr int kNone = -1;
constexpr int kSendTag = 9;  // its own: a message of another op between the same ranks never matches it

class Send final : public Collective {
 public:
  using Collective::Collective;
  double input(const CollectiveArgs&, int rank, std::size_t i) const override { return movedInput(rank, i); }
  std::optional<double> expected(const CollectiveArgs& a, int rank, std::size_t i, const CollectiveLayout& lay) const override {
    const CollectiveCall c = call(rank, nullptr, nullptr, lay, a);
    if (c.peer == kNone) return std::nullopt;  // a sender's (or an idle rank's) buffers: the op defines nothing there
    return movedInput(c.peer, i);
  }
  InPlaceGeometry inPlace(int, const CollectiveLayout&) const override { return {false, 0}; }
  // The peer sent to (the call's root field) and the peer received from (its peer), kNone where the rank does not.
  CollectiveCall call(int rank, const void* s, void* r, const CollectiveLayout& lay, const CollectiveArgs& a) const override {
    const bool sends = rank % 2 == 0 && rank + 1 < a.nranks;
    const bool receives = rank % 2 == 1;
    return {this, s, r, lay.count, a.dtype, a.redop, sends ? rank + 1 : kNone, receives ? rank - 1 : kNone};
  }
#ifdef TRAINSCOPE_HAVE_MPI
  // In place the one buffer is sent from and received into, so the send buffer is always c.send (== c.recv then).
  void runMpi(const MpiCall& m, const CollectiveCall& c) const override {
    const int n = mpiCount(c.count);
    if (c.root != kNone) MPI_CHECK(MPI_Send(c.send, n, mpiType(c.dtype), c.root, kSendTag, m.comm));
    if (c.peer != kNone) MPI_CHECK(MPI_Recv(c.recv, n, mpiType(c.dtype), c.peer, kSendTag, m.comm, MPI_STATUS_IGNORE));
  }
  bool startsOnMpi() const override { return true; }
  // As a pipeline issues its transfers (MPI_Isend / MPI_Irecv, then a wait); an idle rank's request stays null.
  void startMpi(const MpiCall& m, const CollectiveCall& c, MpiRequest& req, std::function<void()>&) const override {
    const int n = mpiCount(c.count);
    if (c.root != kNone) MPI_CHECK(MPI_Isend(c.send, n, mpiType(c.dtype), c.root, kSendTag, m.comm, &req.handle));
    if (c.peer != kNone) MPI_CHECK(MPI_Irecv(c.recv, n, mpiType(c.dtype), c.peer, kSendTag, m.comm, &req.handle));
  }
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
  // In a group, as sendrecv's: a process driving both ranks of a pair (-g 2) posts the send and the receive together.
  void runNccl(const NcclCall& n, const CollectiveCall& c) const override {
    NCCL_CHECK(ncclGroupStart());
    if (c.root != kNone) NCCL_CHECK(ncclSend(c.send, c.count, ncclType(c.dtype), c.root, n.comm, n.stream));
    if (c.peer != kNone) NCCL_CHECK(ncclRecv(c.recv, c.count, ncclType(c.dtype), c.peer, n.comm, n.stream));
    NCCL_CHECK(ncclGroupEnd());
  }
#endif
};
}  // namespace
TS_DEFINE_COLLECTIVE(send, Send)
}  // namespace ts
