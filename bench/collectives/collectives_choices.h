#pragma once
// The sweep's closed choices that only `collectives` names (--placement, --mpi-reduce-scatter, --issue, --cache), each an enum
// with its names (EnumNames): the option table reads them for the help, the error line, the suite, the record's config and the
// generated schema's enum, so none of these keeps a list of its own.
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "comm/communicator.h"

namespace ts {

// --placement: which of each size's placements are measured.
enum class PlacementChoice { kBoth, kOutOfPlace, kInPlace };
template <>
struct EnumNames<PlacementChoice> {
  static constexpr std::pair<std::string_view, PlacementChoice> kNames[] = {
      {"both", PlacementChoice::kBoth}, {"out", PlacementChoice::kOutOfPlace}, {"in", PlacementChoice::kInPlace}};
};

constexpr bool measuresOutOfPlace(PlacementChoice p) { return p != PlacementChoice::kInPlace; }
constexpr bool measuresInPlace(PlacementChoice p) { return p != PlacementChoice::kOutOfPlace; }

// --mpi-reduce-scatter: one of the MPI calls reduce_scatter makes, by the call's own name (MpiReduceScatter, which a
// record carries as its algo), or both, each measured in a section of its own. tests/unit/test_choices.cpp holds the
// names to the calls', so a call added there and not here fails.
enum class MpiReduceScatterChoice { kBlock, kCounts, kBoth };
template <>
struct EnumNames<MpiReduceScatterChoice> {
  static constexpr std::pair<std::string_view, MpiReduceScatterChoice> kNames[] = {{"block", MpiReduceScatterChoice::kBlock},
                                                                                   {"counts", MpiReduceScatterChoice::kCounts},
                                                                                   {"both", MpiReduceScatterChoice::kBoth}};
};

// The choice of one call alone.
constexpr MpiReduceScatterChoice mpiReduceScatterChoiceOf(MpiReduceScatter call) {
  switch (call) {
    case MpiReduceScatter::kBlock:
      return MpiReduceScatterChoice::kBlock;
    case MpiReduceScatter::kCounts:
      return MpiReduceScatterChoice::kCounts;
  }
  return MpiReduceScatterChoice::kBoth;  // not reached: the switch names every call
}

// The calls a choice measures, in the calls' declaration order.
inline std::vector<MpiReduceScatter> mpiReduceScatterCalls(MpiReduceScatterChoice choice) {
  switch (choice) {
    case MpiReduceScatterChoice::kBlock:
      return {MpiReduceScatter::kBlock};
    case MpiReduceScatterChoice::kCounts:
      return {MpiReduceScatter::kCounts};
    case MpiReduceScatterChoice::kBoth:
      break;
  }
  std::vector<MpiReduceScatter> calls;
  for (const auto& [name, call] : EnumNames<MpiReduceScatter>::kNames) calls.push_back(call);
  return calls;
}

// --issue: the forms of each MPI call measured (IssueKind), or both, each in a section of its own.
enum class IssueChoice { kBlocking, kNonblocking, kBoth };
template <>
struct EnumNames<IssueChoice> {
  static constexpr std::pair<std::string_view, IssueChoice> kNames[] = {
      {"blocking", IssueChoice::kBlocking}, {"nonblocking", IssueChoice::kNonblocking}, {"both", IssueChoice::kBoth}};
};

// The forms a choice measures, in IssueKind's declaration order.
inline std::vector<IssueKind> issueKinds(IssueChoice choice) {
  switch (choice) {
    case IssueChoice::kBlocking:
      return {IssueKind::kBlocking};
    case IssueChoice::kNonblocking:
      return {IssueKind::kNonblocking};
    case IssueChoice::kBoth:
      break;
  }
  return {IssueKind::kBlocking, IssueKind::kNonblocking};
}

// --cache: the state of the caches each timed call starts from, or both, each in a section of its own. Hot: OSU's and
// nccl-tests' loop, the same buffers every iteration, so a message smaller than the last-level cache is read from it.
// Cold: before each iteration (untimed) the process writes a buffer larger than that cache (kCacheFlushBytes), so the
// call reads its buffers from memory, as a training step's collectives do once the step's other data has evicted
// them (measured on the 2-core VM: a 4.78 MB in-place reduce-scatter 0.95 ms hot, 1.5-1.8 ms cold, 1.7-2.0 ms inside
// the mlp's ZeRO-1 step; docs/prediction.md).
enum class CacheState { kHot, kCold };
template <>
struct EnumNames<CacheState> {
  static constexpr std::pair<std::string_view, CacheState> kNames[] = {{"hot", CacheState::kHot}, {"cold", CacheState::kCold}};
};
enum class CacheChoice { kHot, kCold, kBoth };
template <>
struct EnumNames<CacheChoice> {
  static constexpr std::pair<std::string_view, CacheChoice> kNames[] = {
      {"hot", CacheChoice::kHot}, {"cold", CacheChoice::kCold}, {"both", CacheChoice::kBoth}};
};

// The states a choice measures, hot first.
inline std::vector<CacheState> cacheStates(CacheChoice choice) {
  switch (choice) {
    case CacheChoice::kHot:
      return {CacheState::kHot};
    case CacheChoice::kCold:
      return {CacheState::kCold};
    case CacheChoice::kBoth:
      break;
  }
  return {CacheState::kHot, CacheState::kCold};
}

// What --cache cold writes before each iteration: above the last-level cache of the hosts trainscope's CPU path stands
// for (32 MiB per core complex on the development VM's EPYC; the VM reports the socket's 512 MiB, which would take
// 40 ms an iteration to write).
inline constexpr std::size_t kCacheFlushBytes = std::size_t{64} << 20;

}  // namespace ts
