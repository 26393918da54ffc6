#include "workloads/device_spec.h"

#include <charconv>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

std::string DeviceSpec::name() const {
  if (!cuda()) return "cpu";
  return index < 0 ? "cuda" : fmt::format("cuda:{}", index);
}

DeviceSpec parseDeviceSpec(std::string_view text) {
  if (text == "cpu") return {DeviceKind::kCpu, -1};
  if (text == "cuda") return {DeviceKind::kCuda, -1};
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
