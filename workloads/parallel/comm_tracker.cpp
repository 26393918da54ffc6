#include "workloads/parallel/comm_tracker.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "base/dtype.h"
#include "base/error.h"
#include "base/steady_seconds.h"
#include "comm/collectives/collective.h"
#include "kernels/instrumentation.h"
#include "kernels/trace.h"

namespace ts::wl {

double CommTracker::now() const { return steadySeconds(); }

double blockedBefore(const CollectiveTiming& c, double lastArrivalS) {
  const double issuing = std::max(0.0, std::min(c.issuedS, lastArrivalS) - c.launchS);
  const double waiting = c.waitFromS < 0 ? 0.0 : std::max(0.0, std::min(c.endS(), lastArrivalS) - c.waitFromS);
  return issuing + waiting;
}

namespace {
thread_local double tBlockedS = 0;  // blockedInCommunicationS(): a thread's own (each rank's steps run on one)
}  // namespace

double blockedInCommunicationS() { return tBlockedS; }

void CommTracker::expose(double seconds) {
  exposedS_ += seconds;
  tBlockedS += seconds;
}

double transferSeconds(const CollectiveTiming& c, double lastArrivalS) {
  return std::max(0.0, c.endS() - std::max(c.launchS, lastArrivalS));
}

int CommTracker::track(TrackedOp what, std::size_t bytes, const std::function<std::unique_ptr<PendingCollective>()>& issue,
                       int peer, std::size_t inElems, std::size_t outElems, DType dtype) {
  Op op{what, bytes, 0, -1, {}};
  op.peer = peer;
  op.inElems = inElems;
  op.outElems = outElems;
  op.dtype = dtype;
  op.start = now();
  op.nvtxRange = nvtx::start(std::string(what.name()).c_str(), nvtx::Category::kCommunication);  // NVTX copies the text
  op.pending = issue();
  op.issued = now();
  expose(op.issued - op.start);  // issuing is host time taken from compute (MPI may do the work here)
  ops_.push_back(std::move(op));
  return static_cast<int>(ops_.size()) - 1;
}

int CommTracker::start(const CollectiveCall& call, std::string label) {
  // Name and bytes as the collectives sweep records them, so a step's op compares with the sweep's.
  const Collective& op = *call.collective;
  const CollectiveLayout layout = op.layoutOfCount(call.count, dtypeSize(call.dtype), comm_.worldSize(), call.exchange);
  const int id = track(
      op, layout.bytes, [&] { return comm_.start(0, call); }, -1, layout.sendElems, layout.recvElems, call.dtype);
  ops_.back().label = std::move(label);
  return id;
}

int CommTracker::startSend(const float* buf, std::size_t count, int peer, int tag) {
  return track(
      PointToPoint::Kind::kSend, count * sizeof(float),
      [&] { return comm_.startSend(0, buf, count, DType::kFloat32, peer, tag); }, peer, count, 0);
}

int CommTracker::startRecv(float* buf, std::size_t count, int peer, int tag) {
  return track(
      PointToPoint::Kind::kRecv, count * sizeof(float),
      [&] { return comm_.startRecv(0, buf, count, DType::kFloat32, peer, tag); }, peer, 0, count);
}

std::vector<int> CommTracker::startTogether(const std::vector<PointToPoint>& ops) {
  std::vector<int> ids;
  if (ops.empty()) return ids;
  const double t0 = now();
  for (const PointToPoint& p : ops) {
    const bool send = p.kind == PointToPoint::Kind::kSend;
    Op op{p.kind, p.count * dtypeSize(p.dtype), t0, -1, {}};
    op.peer = p.peer;
    op.inElems = send ? p.count : 0;
    op.outElems = send ? 0 : p.count;
    op.dtype = p.dtype;
    op.nvtxRange = nvtx::start(std::string(op.what.name()).c_str(), nvtx::Category::kCommunication);
    ops_.push_back(std::move(op));
    ids.push_back(static_cast<int>(ops_.size()) - 1);
  }
  std::shared_ptr<PendingCollective> pending;
  try {
    pending = comm_.startTogether(0, ops);
  } catch (...) {  // nothing was posted: no op of these may be polled or waited for later
    for (int id : ids) nvtx::end(ops_[static_cast<std::size_t>(id)].nvtxRange);
    ops_.erase(ops_.begin() + ids.front(), ops_.end());
    throw;
  }
  const double issued = now();
  for (int id : ids) {
    ops_[static_cast<std::size_t>(id)].pending = pending;
    ops_[static_cast<std::size_t>(id)].issued = issued;
  }
  expose(issued - t0);  // issuing is host time taken from compute
  return ids;
}

void CommTracker::completed(Op& op) {
  op.end = now();
  nvtx::end(op.nvtxRange);
  if (trace::enabled()) {
    const std::string name(op.what.name());
    nlohmann::json args = {{"bytes", op.bytes}, {"group", traceName(group_)}, {"ranks", comm_.worldSize()}};
    if (op.peer >= 0) args["peer"] = op.peer;  // the rank within `group` sent to or received from
    if (!op.label.empty()) args["what"] = op.label;
    // The same facts under the names Kineto gives them on PyTorch's NCCL spans, for the tools that read those.
    args["Collective name"] = name;
    args["In msg nelems"] = op.inElems;
    args["Out msg nelems"] = op.outElems;
    args["dtype"] = std::string(dtypeName(op.dtype));
    args["Group size"] = comm_.worldSize();
    trace::record(name, trace::Role::kCommunication, op.start * 1e6, op.end * 1e6, trace::Track::kCommunication, args);
  }
}

void CommTracker::poll() {
  const double t0 = now();
  for (auto& op : ops_)
    if (op.end < 0 && op.pending->test()) completed(op);
  expose(now() - t0);
}

void CommTracker::wait(int id) {
  Op& op = ops_.at(static_cast<std::size_t>(id));
  if (op.end >= 0) return;
  const double t0 = now();
  op.waitFrom = t0;
  {
    const NvtxRange range("wait", nvtx::Category::kCommunication);
    op.pending->wait(timeoutS_);
  }
  completed(op);
  expose(op.end - t0);
  if (trace::enabled()) {
    nlohmann::json args = {{"group", traceName(group_)}};
    if (!op.label.empty()) args["what"] = op.label;
    trace::record("wait " + std::string(op.what.name()), trace::Role::kWait, t0 * 1e6, op.end * 1e6, trace::Track::kMain, args);
  }
}

double CommTracker::seconds(int id) const {
  const Op& op = ops_.at(static_cast<std::size_t>(id));
  if (op.end < 0) throw Error(fmt::format("internal: {} op {} is still in flight", op.what.name(), id));
  return op.end - op.start;
}

void CommTracker::waitAll() {
  for (std::size_t i = 0; i < ops_.size(); ++i) wait(static_cast<int>(i));
}

double CommTracker::sum(double v, bool timed) {
  sum(std::span<double>(&v, 1), timed);
  return v;
}

void CommTracker::sum(std::span<double> v, bool timed) {
  if (v.empty()) return;
  const std::size_t bytes = v.size_bytes();
  if (sums_.bytes() < bytes) sums_ = CommBuffer(comm_, 0, bytes);
  comm_.copyIn(0, sums_.get(), v.data(), bytes);
  const CollectiveCall call{&collectives::all_reduce(), sums_.get(), sums_.get(), v.size(), DType::kFloat64, RedOp::kSum};
  if (timed) {
    run(call);
  } else {
    trace::Span blocked("wait sum", trace::Role::kWait);  // not the step's communication, but the host waits on its peers
    comm_.start(0, call)->wait(timeoutS_);
  }
  comm_.copyOut(0, v.data(), sums_.get(), bytes);
}

std::vector<double> CommTracker::gather(std::span<const double> mine) {
  const auto n = static_cast<std::size_t>(comm_.worldSize());
  const std::size_t bytes = mine.size_bytes();
  if (gathers_.bytes() < (n + 1) * bytes) gathers_ = CommBuffer(comm_, 0, (n + 1) * bytes);
  char* all = static_cast<char*>(gathers_.get());
  comm_.copyIn(0, all + n * bytes, mine.data(), bytes);
  run({&collectives::all_gather(), all + n * bytes, all, mine.size(), DType::kFloat64, RedOp::kSum});
  std::vector<double> out(n * mine.size());
  comm_.copyOut(0, out.data(), all, n * bytes);
  return out;
}

StepComm CommTracker::take() {
  StepComm s;
  std::vector<std::pair<double, double>> spans;
  for (const auto& op : ops_) {
    if (op.end < 0) throw Error("internal: CommTracker::take with a collective in flight");
    s.collectives.push_back({op.what, op.bytes, op.end - op.start, group_, op.start, op.issued, op.waitFrom});
    spans.emplace_back(op.start, op.end);
  }
  std::sort(spans.begin(), spans.end());
  double covered = 0, from = 0, to = -1;
  for (const auto& [a, b] : spans) {
    if (a > to) {
      if (to > from) covered += to - from;
      from = a;
      to = b;
    } else {
      to = std::max(to, b);
    }
  }
  if (to > from) covered += to - from;
  s.communicationS = covered;
  s.exposedS = exposedS_;
  ops_.clear();
  exposedS_ = 0;
  return s;
}

}  // namespace ts::wl
