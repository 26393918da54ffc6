#pragma once
// The closed choices of `trainscope scale`: how the batch grows with the ranks, and what starts the
// points. The options hold them, the records write their names.
#include <string_view>
#include <utility>

#include "base/enum_names.h"

namespace ts {

enum class ScaleMode {
  kWeak,    // --batch per rank: the global batch grows with the ranks
  kStrong,  // --batch is the global batch
};

enum class LauncherKind {
  kMpirun,
  kSrun,  // inside an allocation
  kNone,  // this process runs the one point (--ranks 1 only)
};

template <>
struct EnumNames<ScaleMode> {
  static constexpr std::pair<std::string_view, ScaleMode> kNames[] = {{"weak", ScaleMode::kWeak}, {"strong", ScaleMode::kStrong}};
};
template <>
struct EnumNames<LauncherKind> {
  static constexpr std::pair<std::string_view, LauncherKind> kNames[] = {
      {"mpirun", LauncherKind::kMpirun}, {"srun", LauncherKind::kSrun}, {"none", LauncherKind::kNone}};
};

}  // namespace ts
