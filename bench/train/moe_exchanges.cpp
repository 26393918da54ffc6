#include "bench/train/moe_exchanges.h"

#include "comm/collectives/collective.h"

namespace ts {

MoeExchangeFigures moeExchangeFigures(const ExpertExchanges& exchanges, const std::string& layer, wl::MoeExchange d, int ranks) {
  MoeExchangeFigures f;
  const auto it = exchanges.find(wl::moeExchangeName(layer, d));
  if (it == exchanges.end() || it->second.calls == 0) return f;
  const wl::ExpertExchangeStats& s = it->second;
  f.calls = s.calls;
  f.rowsSent = s.rowsSent;
  f.largestBytes = s.largestBytes;
  const auto calls = static_cast<double>(s.calls);
  f.bytesPerCall = static_cast<double>(s.bytes) / calls;
  f.secondsPerCall = s.seconds / calls;
  // As the sweep's busbw: algbw (bytes over time) times the op's bus factor, (n - 1) / n for an alltoallv.
  if (s.seconds > 0) f.busbwGbps = static_cast<double>(s.bytes) / s.seconds / 1e9 * collectives::alltoallv().busFactor(ranks);
  return f;
}

}  // namespace ts
