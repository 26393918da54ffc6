#pragma once
// Which device a run trains on, as --device names it: "cpu", "cuda" or "cuda:N". The text is read once, at
// the edge (parseDeviceSpec); everything past it holds this, and writes it back with name().
#include <string>
#include <string_view>

#include "base/enum_names.h"

namespace ts::wl {

enum class DeviceKind { kCpu, kCuda };

}  // namespace ts::wl

namespace ts {
// As the train record's backend names them.
template <>
struct EnumNames<wl::DeviceKind> {
  static constexpr std::pair<std::string_view, wl::DeviceKind> kNames[] = {{"cpu", wl::DeviceKind::kCpu},
                                                                           {"cuda", wl::DeviceKind::kCuda}};
};
}  // namespace ts

namespace ts::wl {

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  // cuda:N. -1: "cuda" with no index, GPU 0; a multi-process run gives each process its own (its local
  // rank), which is why "no index" is kept apart from "cuda:0".
  int index = -1;

  bool cuda() const { return kind == DeviceKind::kCuda; }
  int ordinal() const { return index < 0 ? 0 : index; }  // the CUDA device number
  std::string name() const;                              // as parsed: "cpu", "cuda", "cuda:N"
  bool operator==(const DeviceSpec&) const = default;
};

// UsageError "--device X: expected cpu, cuda or cuda:N" for anything else.
DeviceSpec parseDeviceSpec(std::string_view text);

}  // namespace ts::wl
