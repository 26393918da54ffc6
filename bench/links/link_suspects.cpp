#include "bench/links/link_suspects.h"

#include <fmt/format.h>

namespace ts {
namespace {

bool duplex(const std::string& type) { return type == "nvlink" || type == "pcie" || type == "c2c" || type == "network"; }

// The bytes an MPI pair's processes copy between, together: a send and a receive buffer on each sending side.
std::optional<std::uint64_t> pairBufferBytes(const LinkMeasurement& m) {
  const auto* f = std::get_if<MpiPairFields>(&m.fields);
  if (!f) return std::nullopt;
  return f->messageBytes * 2 * (m.direction == "bi" ? 2 : 1);
}

}  // namespace

std::optional<double> peakOfDirections(const LinkClass& link, bool bidirectional) {
  if (!link.peakGbps) return std::nullopt;
  return *link.peakGbps * (bidirectional && duplex(link.type) ? 2 : 1);
}

void judgePeak(LinkMeasurement& m, const PeakJudge& judge) {
  const bool planted = judge.plantedScale != 1;
  if (planted && m.link.peakGbps) *m.link.peakGbps *= judge.plantedScale;
  const auto bw = bandwidthOf(m);
  const auto peak = peakOfDirections(m.link, m.direction == "bi");
  m.suspect.reset();
  if (!bw || !peak || !aboveCeiling(*bw / *peak)) return;
  const auto buffers = pairBufferBytes(m);
  if (planted)
    m.suspect = SuspectCause::kPlantedFault;
  else if (m.link.type == "shm" && buffers && *buffers <= judge.lastLevelCacheBytes)
    m.suspect = SuspectCause::kCacheResidency;
  else
    m.suspect = SuspectCause::kUnexplained;
}

std::string_view linkSuspectCauseText(SuspectCause c) {
  switch (c) {
    case SuspectCause::kPlantedFault:
      return "a planted fault (TRAINSCOPE_FAULT=ceiling) scaled the link peaks down";
    case SuspectCause::kCacheResidency:
      return "both ranks on one host, whose last-level cache holds the pair's buffers (every message reuses them, as "
             "osu_bw's do): the copies ran from cache, faster than the host's memory copy that sets the shared-memory peak";
    case SuspectCause::kBusyHost:
    case SuspectCause::kUnexplained:
    case SuspectCause::kDatasheetMismatch:
      break;
  }
  return "no cause found (a link faster than the peak its type and the inventory give it?)";
}

SuspectFigure linkSuspectFigure(const LinkMeasurement& m) {
  const double fraction = bandwidthOf(m).value_or(0) / peakOfDirections(m.link, m.direction == "bi").value_or(1);
  return {fmt::format("{} {} -> {}", m.test, m.src, m.dst), fraction, m.suspect.value_or(SuspectCause::kUnexplained)};
}

std::string linkSuspectWarning(const std::vector<SuspectFigure>& figures) {
  return suspectWarning(figures, "of their link's peak", linkSuspectCauseText);
}

}  // namespace ts
