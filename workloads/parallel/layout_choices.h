#pragma once
// The closed choices of a parallel layout (LayoutOptions): how data-parallel ranks combine gradients, and
// the order of a pipeline stage's forwards and backwards. Their own header, so that the layout's grid
// code and these names change apart.
#include <string_view>
#include <utility>

#include "base/enum_names.h"

namespace ts::wl {

// --sync: all-reduce (sharded by --zero), parameter servers (synchronous, or asynchronous with bounded
// staleness: async_ps.h), or model averaging (local SGD: every rank steps on its own gradients, the
// parameters averaged every --average-every steps).
enum class SyncKind { kAllReduce, kParameterServer, kAsyncParameterServer, kAverage };

enum class PipelineSchedule { kGPipe, k1F1B };  // --pp-schedule (pipeline.h says what each runs)

// --sync-bn: batch norm's statistics over the whole data-parallel batch (SyncBatchNorm) or each rank's own;
// auto: on where it makes data parallel train as one process does (a model with batch norm, dp > 1, the CPU).
enum class SyncBatchNorm { kAuto, kOn, kOff };

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::SyncKind> {
  static constexpr std::pair<std::string_view, wl::SyncKind> kNames[] = {{"allreduce", wl::SyncKind::kAllReduce},
                                                                         {"ps", wl::SyncKind::kParameterServer},
                                                                         {"ps-async", wl::SyncKind::kAsyncParameterServer},
                                                                         {"average", wl::SyncKind::kAverage}};
};
template <>
struct EnumNames<wl::SyncBatchNorm> {
  static constexpr std::pair<std::string_view, wl::SyncBatchNorm> kNames[] = {
      {"auto", wl::SyncBatchNorm::kAuto}, {"on", wl::SyncBatchNorm::kOn}, {"off", wl::SyncBatchNorm::kOff}};
};
template <>
struct EnumNames<wl::PipelineSchedule> {
  static constexpr std::pair<std::string_view, wl::PipelineSchedule> kNames[] = {{"gpipe", wl::PipelineSchedule::kGPipe},
                                                                                 {"1f1b", wl::PipelineSchedule::k1F1B}};
};
}  // namespace ts
