#pragma once
// What a training step's communication operation is: a collective of the registry, or one side of a point-to-point
// transfer (a pipeline stage's send or receive). Its name, which traces, NVTX ranges and records write, is made here
// only: the collective's registry name, or send / recv.
#include <string_view>
#include <utility>

#include "base/enum_names.h"
#include "comm/collectives/collective.h"
#include "comm/communicator.h"

namespace ts {
// The names traces and records give a tracked send or receive (TrackedOp::name).
template <>
struct EnumNames<PointToPoint::Kind> {
  static constexpr std::pair<std::string_view, PointToPoint::Kind> kNames[] = {{"send", PointToPoint::Kind::kSend},
                                                                               {"recv", PointToPoint::Kind::kRecv}};
};
}  // namespace ts

namespace ts::wl {

class TrackedOp {
 public:
  // A collective or a send/receive is a tracked op as it stands (CommTracker::start takes either).
  TrackedOp(const Collective& c) : collective_(&c) {}           // NOLINT(google-explicit-constructor)
  TrackedOp(PointToPoint::Kind side) : side_(side) {}           // NOLINT(google-explicit-constructor)
  const Collective* collective() const { return collective_; }  // null for a send or a receive
  std::string_view name() const { return collective_ ? collective_->name() : nameOf(side_); }
  // busbw / algbw over a group of `groupSize`: a send or a receive is between two stages, all its bytes cross the one link.
  double busFactor(int groupSize) const { return collective_ ? collective_->busFactor(groupSize) : 1.0; }
  bool operator==(const TrackedOp& o) const { return collective_ == o.collective_ && (collective_ || side_ == o.side_); }
  // By name: the order a record lists its rows in.
  bool operator<(const TrackedOp& o) const { return name() < o.name(); }

 private:
  const Collective* collective_ = nullptr;
  PointToPoint::Kind side_ = PointToPoint::Kind::kSend;
};

}  // namespace ts::wl
