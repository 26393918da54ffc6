#pragma once
// A link figure above the peak of its link: impossible for the link itself, so the figure measured something
// else, and it is flagged as the roofline's ceilings flag theirs (ceiling_suspect and its cause in the record, ! on
// the console, one # warning: line). On one host the "link" of an MPI pair is a memory copy: osu_bw's method reuses
// one send and one receive buffer for every message, and where those fit the last-level cache the copy runs from
// cache, faster than the host's memory copy that sets the shared-memory peak.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/kernels/roofline.h"
#include "bench/links/link_record.h"

namespace ts {

// The peak a figure of these directions is held to: a duplex link (NVLink, PCIe, C2C, a network) carries its peak in
// each direction at once, so both directions' bytes are held to twice it; memory (shm, dram, hbm, host) is one
// system both directions share. nullopt where the link's peak is unknown.
std::optional<double> peakOfDirections(const LinkClass& link, bool bidirectional);

// What judging a figure knows besides the record: a planted peak (TRAINSCOPE_FAULT=ceiling scales every peak by it,
// for the tests), and the last-level cache of the host, for the cause.
struct PeakJudge {
  double plantedScale = 1;
  std::uint64_t lastLevelCacheBytes = 0;
};

// Scales m's peak by a planted fault's factor, then sets m.suspect when its bandwidth lands above the peak of its
// directions: planted_fault when planted; cache_residency for an MPI pair on one host whose buffers (a send and a
// receive buffer of message_bytes on each sending side) fit the last-level cache; else unexplained.
void judgePeak(LinkMeasurement& m, const PeakJudge& judge);

// The clause of the console's warning line for each cause a link figure can have.
std::string_view linkSuspectCauseText(SuspectCause c);
// A suspect record as the warning line names it ("mpi_bandwidth rank 0 -> rank 1", its fraction of the peak held to).
SuspectFigure linkSuspectFigure(const LinkMeasurement& m);
// The one warning line for them ("" when none).
std::string linkSuspectWarning(const std::vector<SuspectFigure>& figures);

}  // namespace ts
