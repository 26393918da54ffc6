// The pipeline's transfers run as NCCL runs them, simulated without a GPU (issue #33): every stage's
// transfers go onto one stream and run one posted unit after another; a send completes only while its
// receiver's matching receive is running, and the receive only while the send is (rendezvous: a message
// larger than NCCL's per-peer buffering, GPT-2's 25 MB activations); the transfers of one group progress
// side by side. A stage's host waits where its plan says. The whole step must complete for every
// (stages, micro-batches), 1F1B and GPipe, with every message received as the micro-batch it was sent as
// (NCCL matches by order, not by tag). The order Pipeline::step posted in before must deadlock here,
// as it would on a GPU, so the simulation is shown able to fail.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "workloads/parallel/pipeline.h"

namespace ts::wl {
namespace {

// What a stage's host does, in order: post a group onto its stream, or wait until posted group `index` completes.
struct HostAction {
  bool post;
  std::vector<PipeTransfer> group;  // post
  int index = 0;                    // wait
};
using Program = std::vector<HostAction>;

// What Pipeline::step does with the plan: wait for the previous step's group, compute, post the next group.
Program programOf(const std::vector<PipeStep>& plan) {
  Program p;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    if (k > 0) p.push_back({false, {}, static_cast<int>(k) - 1});
    p.push_back({true, plan[k].post});
  }
  p.push_back({false, {}, static_cast<int>(plan.size()) - 1});
  return p;
}

// What Pipeline::step did before issue #33: each transfer posted alone, a receive waited for before its
// compute, a send left in flight until the step's end.
Program oldProgramOf(PipelineSchedule kind, int stage, int stages, int micros) {
  const bool first = stage == 0, last = stage == stages - 1;
  Program p;
  int posted = 0;
  for (const PipeOp& op : pipelineSchedule(kind, stage, stages, micros)) {
    const bool receives = op.forward ? !first : !last;
    const bool sends = op.forward ? !last : !first;
    if (receives) {
      p.push_back({true, {{op.forward ? PipeTransferKind::kRecvActivation : PipeTransferKind::kRecvGradient, op.micro}}});
      p.push_back({false, {}, posted++});
    }
    if (sends) {
      p.push_back({true, {{op.forward ? PipeTransferKind::kSendActivation : PipeTransferKind::kSendGradient, op.micro}}});
      ++posted;
    }
  }
  for (int k = 0; k < posted; ++k) p.push_back({false, {}, k});
  return p;
}

struct Posted {
  PipeTransfer transfer;
  int order;  // its place among this stage's transfers to (or from) that peer in that direction: NCCL's matching
  bool done = false;
};

struct Outcome {
  bool completed = true;
  std::string stuck;       // when not: each stage's host and the transfers its stream is running
  std::string mismatched;  // a message received as another micro-batch than it was sent as
};

Outcome simulate(const std::vector<Program>& programs) {
  const int stages = static_cast<int>(programs.size());
  std::vector<std::size_t> pc(programs.size(), 0);
  std::vector<std::vector<std::vector<Posted>>> groups(programs.size());  // per stage, its posted groups in order
  std::vector<std::size_t> running(programs.size(), 0);                   // per stage, the group its stream runs
  std::map<std::pair<int, int>, int> sent, received;                      // per (from, to): transfers posted so far
  auto complete = [](const std::vector<Posted>& g) {
    for (const Posted& p : g)
      if (!p.done) return false;
    return true;
  };
  Outcome out;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      const auto u = static_cast<std::size_t>(s);
      while (pc[u] < programs[u].size()) {
        const HostAction& a = programs[u][pc[u]];
        if (a.post) {
          std::vector<Posted>& g = groups[u].emplace_back();
          for (const PipeTransfer& t : a.group) {
            const int peer = s + t.peerOffset();
            const std::pair<int, int> link = t.send() ? std::pair{s, peer} : std::pair{peer, s};
            g.push_back({t, (t.send() ? sent : received)[link]++});
          }
        } else if (!(static_cast<std::size_t>(a.index) < running[u] ||
                     (static_cast<std::size_t>(a.index) == running[u] && complete(groups[u][running[u]])))) {
          break;  // the host waits
        }
        ++pc[u];
        progress = true;
      }
    }
    // The streams: each runs its first incomplete group; a send and its receive complete when both run.
    for (int s = 0; s < stages; ++s) {
      const auto u = static_cast<std::size_t>(s);
      if (running[u] >= groups[u].size()) continue;
      for (Posted& send : groups[u][running[u]]) {
        if (send.done || !send.transfer.send()) continue;
        const auto peer = static_cast<std::size_t>(s + send.transfer.peerOffset());
        if (running[peer] >= groups[peer].size()) continue;
        for (Posted& recv : groups[peer][running[peer]])
          if (!recv.done && !recv.transfer.send() &&
              static_cast<std::size_t>(static_cast<int>(peer) + recv.transfer.peerOffset()) == u && recv.order == send.order) {
            send.done = recv.done = true;
            progress = true;
            if (recv.transfer.micro != send.transfer.micro)
              out.mismatched +=
                  fmt::format("stage {} received micro-batch {} as {}; ", peer, send.transfer.micro, recv.transfer.micro);
          }
      }
    }
    for (std::size_t u = 0; u < programs.size(); ++u)
      while (running[u] < groups[u].size() && complete(groups[u][running[u]])) {
        ++running[u];
        progress = true;
      }
  }
  for (int s = 0; s < stages; ++s) {
    const auto u = static_cast<std::size_t>(s);
    if (pc[u] == programs[u].size() && running[u] == groups[u].size()) continue;
    out.completed = false;
    out.stuck += fmt::format("stage {}: host at action {} of {}, stream runs", s, pc[u], programs[u].size());
    if (running[u] < groups[u].size())
      for (const Posted& p : groups[u][running[u]])
        if (!p.done)
          out.stuck += fmt::format(
              " {} {} of micro-batch {} {} stage {};", p.transfer.send() ? "send" : "recv",
              p.transfer.kind == PipeTransferKind::kSendActivation || p.transfer.kind == PipeTransferKind::kRecvActivation
                  ? "activation"
                  : "gradient",
              p.transfer.micro, p.transfer.send() ? "to" : "from", s + p.transfer.peerOffset());
    out.stuck += " | ";
  }
  return out;
}

TEST(PipelineTransfers, EveryStepCompletesWhenASendWaitsForItsReceiver) {
  for (PipelineSchedule kind : {PipelineSchedule::k1F1B, PipelineSchedule::kGPipe})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 12; ++m) {
        std::vector<Program> programs;
        for (int s = 0; s < p; ++s) programs.push_back(programOf(pipelinePlan(kind, s, p, m)));
        const Outcome o = simulate(programs);
        EXPECT_TRUE(o.completed) << ts::nameOf(kind) << ", " << p << " stages, " << m << " micro-batches: deadlock: " << o.stuck;
        EXPECT_EQ(o.mismatched, "") << ts::nameOf(kind) << ", " << p << " stages, " << m << " micro-batches";
      }
}

TEST(PipelineTransfers, EachSendIsPostedWithTheReceiveTheNextComputeNeeds) {
  for (PipelineSchedule kind : {PipelineSchedule::k1F1B, PipelineSchedule::kGPipe})
    for (int p = 1; p <= 6; ++p)
      for (int m = 1; m <= 8; ++m)
        for (int s = 0; s < p; ++s) {
          const std::vector<PipeStep> plan = pipelinePlan(kind, s, p, m);
          const std::vector<PipeOp> ops = pipelineSchedule(kind, s, p, m);
          ASSERT_EQ(plan.size(), ops.size() + 1);
          EXPECT_FALSE(plan.front().compute.has_value());
          int sends = 0, receives = 0;
          for (std::size_t k = 0; k < plan.size(); ++k) {
            if (k > 0) {
              ASSERT_TRUE(plan[k].compute.has_value());
              EXPECT_EQ(plan[k].compute->forward, ops[k - 1].forward);
              EXPECT_EQ(plan[k].compute->micro, ops[k - 1].micro);
            }
            // NCCL runs a group's calls to one peer in order: at most one send to and one receive from each.
            std::map<std::pair<bool, int>, int> perPeer;
            for (const PipeTransfer& t : plan[k].post) {
              const int sameWay = ++perPeer[std::pair{t.send(), t.peerOffset()}];
              EXPECT_EQ(sameWay, 1) << "stage " << s << " step " << k;
              EXPECT_GE(s + t.peerOffset(), 0);
              EXPECT_LT(s + t.peerOffset(), p);
              (t.send() ? sends : receives)++;
              if (!t.send() && k + 1 < plan.size()) {  // the receive is the next compute's input
                EXPECT_EQ(t.micro, plan[k + 1].compute->micro);
                EXPECT_EQ(t.kind == PipeTransferKind::kRecvActivation, plan[k + 1].compute->forward);
              }
            }
          }
          // One message each way per micro-batch, except at the pipeline's ends.
          const int links = (s > 0 ? 1 : 0) + (s < p - 1 ? 1 : 0);
          EXPECT_EQ(sends, links * m);
          EXPECT_EQ(receives, links * m);
        }
}

TEST(PipelineTransfers, TheOldPostingOrderDeadlocks) {
  // Reproduction of the defect: stage 0 of 2 sends micro-batch 1's activation while stage 1 sends micro-batch
  // 0's gradient, each queued before the receive the other's send needs.
  const Outcome o = simulate({oldProgramOf(PipelineSchedule::k1F1B, 0, 2, 2), oldProgramOf(PipelineSchedule::k1F1B, 1, 2, 2)});
  EXPECT_FALSE(o.completed);
  EXPECT_NE(o.stuck.find("send activation of micro-batch 1 to stage 1"), std::string::npos) << o.stuck;
  EXPECT_NE(o.stuck.find("send gradient of micro-batch 0 to stage 0"), std::string::npos) << o.stuck;
  // Every 1F1B pipeline with a steady state deadlocked; GPipe, whose stages never send both ways at once, did not.
  for (int p = 2; p <= 6; ++p)
    for (int m = 2; m <= 8; ++m) {
      std::vector<Program> oneF, gpipe;
      for (int s = 0; s < p; ++s) {
        oneF.push_back(oldProgramOf(PipelineSchedule::k1F1B, s, p, m));
        gpipe.push_back(oldProgramOf(PipelineSchedule::kGPipe, s, p, m));
      }
      EXPECT_FALSE(simulate(oneF).completed) << p << " stages, " << m << " micro-batches";
      EXPECT_TRUE(simulate(gpipe).completed) << p << " stages, " << m << " micro-batches";
    }
}

}  // namespace
}  // namespace ts::wl
