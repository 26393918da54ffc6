#include "workloads/device_spec.h"

#include <charconv>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

std::string DeviceSpec::name() const {
  if (!cuda() || index < 0) return std::string(nameOf(kind));
  return fmt::format("{}:{}", nameOf(kind), index);
}

DeviceSpec parseDeviceSpec(std::string_view text) {
  if (const std::optional<DeviceKind> kind = enumFromName<DeviceKind>(text)) return {*kind, -1};
  constexpr std::string_view kPrefix = "cuda:";
  if (text.substr(0, kPrefix.size()) == kPrefix) {
    const std::string_view digits = text.substr(kPrefix.size());
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (!digits.empty() && ec == std::errc() && end == digits.data() + digits.size() && index >= 0)
      return {DeviceKind::kCuda, index};
  }
  throw UsageError(fmt::format("--device {}: expected cpu, cuda or cuda:N", text));
}

}  // namespace ts::wl
