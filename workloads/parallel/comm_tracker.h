#pragma once
// The collectives a training step issues, timed from launch to observed completion, and the host time
// the step spent issuing, polling and waiting for them (exposed communication: what overlap did not hide).
//
// "Observed completion": on MPI a nonblocking collective progresses when the library is entered (each
// poll() or wait()), so an op's interval ends when a poll first sees it complete; on NCCL, when its event
// has fired by the time it is polled. communication_s is the length of the union of the intervals, so
// concurrent ops count once.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "workloads/parallel/process_group.h"
#include "workloads/parallel/tracked_op.h"

namespace ts::wl {

struct CollectiveTiming {
  TrackedOp op;  // the collective, or a send/recv
  std::size_t bytes = 0;
  double seconds = 0;    // launch to observed completion
  ProcessGroupId group;  // the communicator's: the k-th op of a group is one operation on every member
  double launchS = 0;    // when this rank launched it (steady clock, seconds): its arrival
  // When the host was blocked on it: from launchS to issuedS (the launch call; where a backend cannot start it
  // nonblocking, that is the whole operation), and from waitFromS to the end (a wait; -1: a poll saw it complete).
  double issuedS = 0, waitFromS = -1;
  std::int64_t step = -1;  // the timed step it was part of (set where a rank's steps are gathered: bench/train)
  double endS() const { return launchS + seconds; }
};

// How long this rank's host was blocked on `c` before `lastArrivalS`, the launch of its group's last member: time
// spent waiting for a peer to arrive, not transferring (nothing can move before every member has launched).
double blockedBefore(const CollectiveTiming& c, double lastArrivalS);
// From the last member's launch to the observed completion: the transfer, without the wait for the last peer.
double transferSeconds(const CollectiveTiming& c, double lastArrivalS);

struct StepComm {
  double communicationS = 0;  // union of the in-flight intervals
  double exposedS = 0;        // host time spent in communication calls: issuing, polling, waiting
  std::vector<CollectiveTiming> collectives;
  // Another group's figures added to these (the step's groups together: their intervals summed, not united).
  void add(const StepComm& other) {
    communicationS += other.communicationS;
    exposedS += other.exposedS;
    collectives.insert(collectives.end(), other.collectives.begin(), other.collectives.end());
  }
};

// This thread's time blocked in every tracker's communication calls so far (issuing, polling, waiting: what each
// adds to its exposed figure), so that a phase can tell its own compute from the calls made inside it: a bucket
// issued in the backward (Open MPI's receiver may copy the peer's data in the issuing call), ZeRO-3's gathers,
// tensor parallelism's sums (train_step.cpp).
double blockedInCommunicationS();

class CommTracker {
 public:
  // group: the mesh's group `comm` is, which trace spans and timings name.
  CommTracker(Communicator& comm, double timeoutS, ProcessGroupId group) : comm_(comm), timeoutS_(timeoutS), group_(group) {}
  Communicator& comm() { return comm_; }
  void setGroup(ProcessGroupId group) { group_ = group; }
  // Issues the call and returns its id. label: what the call is for ("h.0.moe dispatch"), which its trace span's
  // args name (empty: nothing more than the op).
  int start(const CollectiveCall& call, std::string label = {});
  // Point to point (pipeline stages): a send to / a receive from `peer` of this communicator.
  int startSend(const float* buf, std::size_t count, int peer, int tag);
  int startRecv(float* buf, std::size_t count, int peer, int tag);
  // Sends and receives posted together (Communicator::startTogether: one NCCL group), each tracked as its
  // own send or recv; their ids, in order.
  std::vector<int> startTogether(const std::vector<PointToPoint>& ops);
  // Tests every op in flight (lets MPI progress them) and notes the ones that completed.
  void poll();
  // Blocks until op `id` (every op: waitAll) completes; the time blocked counts as exposed.
  void wait(int id);
  void waitAll();
  // start + wait: an op nothing overlaps.
  void run(const CollectiveCall& call, std::string label = {}) { wait(start(call, std::move(label))); }
  // A completed op's time from launch to observed completion (its CollectiveTiming::seconds); valid until take().
  double seconds(int id) const;
  // The sum of one number over the group (a loss, a squared norm), through a buffer where the backend
  // works; timed: counted in this step's figures, else not recorded.
  double sum(double v, bool timed);
  // The same for several numbers at once, in place (one collective).
  void sum(std::span<double> v, bool timed);
  // Every rank's `mine` (as many numbers on each), concatenated in rank order: one all-gather, timed.
  std::vector<double> gather(std::span<const double> mine);
  // This step's figures; clears them. Every op must be complete.
  StepComm take();

 private:
  struct Op {
    TrackedOp what;
    std::size_t bytes;
    double start, end = -1;
    std::shared_ptr<PendingCollective> pending;  // shared by the ops posted together
    std::uint64_t nvtxRange = 0;                 // launch to observed completion, as in the trace
    int peer = -1;                               // send/recv: the other rank (in the group), which the trace span names
    // Kineto's collective arguments (PyTorch's profiler writes them on its NCCL spans; HTA reads them): this
    // rank's input and output elements and their type.
    std::size_t inElems = 0, outElems = 0;
    DType dtype = DType::kFloat32;
    double issued = 0, waitFrom = -1;  // the launch call's return; when a wait for it began (CollectiveTiming)
    std::string label;                 // start's
  };
  double now() const;
  void expose(double seconds);  // adds to exposedS_ and to this thread's blockedInCommunicationS()
  void completed(Op& op);       // notes the end (and its trace span)
  int track(TrackedOp what, std::size_t bytes, const std::function<std::unique_ptr<PendingCollective>()>& issue, int peer = -1,
            std::size_t inElems = 0, std::size_t outElems = 0, DType dtype = DType::kFloat32);
  Communicator& comm_;
  double timeoutS_;
  ProcessGroupId group_;
  std::vector<Op> ops_;
  double exposedS_ = 0;
  CommBuffer sums_;     // sum()'s numbers, where the backend works
  CommBuffer gathers_;  // gather()'s: every rank's numbers, then this rank's own after them
};

}  // namespace ts::wl
