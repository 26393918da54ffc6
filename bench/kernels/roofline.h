#pragma once
// The roofline's arithmetic, apart from any measurement: which memory ceiling a kernel's data streams
// at, where a timed kernel lands under the ceilings, and, for one that lands above its ceiling, the likely
// reason.
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

enum class CeilingKind { kCompute, kMemory };
std::string_view ceilingKindName(CeilingKind k);  // "compute", "memory" (the records' names)

// The levels of the memory hierarchy a copy ceiling is measured at: the CPU's data caches and DRAM, or a
// GPU's L2 and its device memory (dram).
enum class MemoryLevel { kL1, kL2, kL3, kDram };
std::string_view memoryLevelName(MemoryLevel l);   // "l1", "l2", "l3", "dram" (the records' names)
std::string_view memoryLevelLabel(MemoryLevel l);  // "L1", "L2", "L3", "DRAM" (the console's)

struct MemoryCeiling {
  MemoryLevel level = MemoryLevel::kDram;
  // The largest working set the level holds, in bytes (for a CPU cache: over the instances the measuring
  // threads reach); infinite for DRAM.
  double capacityBytes = std::numeric_limits<double>::infinity();
  double gbps = 0;
};

// The ceiling a kernel moving `bytes` streams at. When its data stays warm between timed runs (the same
// buffers, nothing flushed in between: every CPU case, and CUDA cases timed as graph replays), the nearest
// level that holds it; otherwise the farthest (DRAM). `levels` are nearest first and end with DRAM; none
// empty. A working set slightly larger than a level's capacity counts as the next level (its ceiling is
// then lower than the data may really see, so a fraction above 100% is still caught by the re-check).
const MemoryCeiling& memoryCeilingFor(const std::vector<MemoryCeiling>& levels, double bytes, bool cachesWarm);

// The working set a copy measuring a cache level should touch: half the level's capacity, so that it fits
// with room to spare, but more than the level before it holds (else it would measure that one); halfway
// between the two when half is not enough; none when the level is no larger than the one before (an
// exclusive or odd hierarchy: that level is not measured).
std::optional<double> cacheCopyWorkingSet(double previousCapacity, double capacity);

struct RooflinePlace {
  CeilingKind bound = CeilingKind::kCompute;  // the ceiling that limits this intensity
  double attainableTflops = 0;                // min(compute, intensity x memory)
  double fraction = 0;                        // achieved / attainable
};
// A kernel achieving `tflops` at `intensity` FLOP/byte under a compute ceiling (TFLOP/s) and a memory
// ceiling (GB/s); both ceilings > 0.
RooflinePlace placeOnRoofline(double tflops, double intensity, double computeTflops, double memoryGbps);

// Whether a figure at `fraction` of its ceiling is above it: at any excess over 100%, with no margin for noise,
// because of how the two are timed. A ceiling is the fastest of its trials (ceilings.h's kCeilingProtocol), a figure
// the median of its own samples, so noise alone puts the same work above its ceiling only when every trial ran slower
// than that median: a chance set by the counts, whatever the spread (2^-trials for a figure of many samples, more for
// one of few; test_roofline.cpp measures it).
// That chance is why a figure above has its ceiling re-measured first, and is marked ceiling_suspect only when it
// stays above the fastest of twice the trials; what then stays above differs in its conditions (SuspectCause below)
// or is work faster than the ceiling's, worth naming either way.
inline bool aboveCeiling(double fraction) { return fraction > 1; }

// Why a record may land above its ceiling even after the ceiling was re-measured, in the order it is
// decided: a planted fault scaled the ceiling down (tests); other processes took a good share of the CPUs
// while the ceiling was measured (multi-threaded ceilings lose more to a busy core than small kernels
// that run on one); a memory-bound kernel whose data sat in a nearer level than its bytes chose; none of
// these (a clock change, or an op whose FLOP/byte count overstates what it does). A datasheet peak (MFU)
// has nothing to re-measure: above it, the table entry or the clock read does not fit the GPU.
enum class SuspectCause { kPlantedFault, kBusyHost, kCacheResidency, kUnexplained, kDatasheetMismatch };
std::string_view suspectCauseName(SuspectCause c);         // the records' names: planted_fault, busy_host, ...
SuspectCause suspectCauseFromName(std::string_view name);  // kUnexplained for a name it does not know
std::string_view suspectCauseText(SuspectCause c);         // a clause for the console's warning line
// Other processes' share of the CPUs from which a ceiling counts as measured on a busy host.
inline constexpr double kBusyHostFraction = 0.10;
SuspectCause likelySuspectCause(bool planted, std::optional<double> othersCpuFraction, CeilingKind bound);

// A figure still above its ceiling after the re-check: what it is ("gemm attn.qkv", "MFU"), how far above.
struct SuspectFigure {
  std::string name;
  double fraction = 0;
  SuspectCause cause = SuspectCause::kUnexplained;
};
// The console's one warning line for them, grouped by cause (at most kSuspectNames named per cause); ""
// when there are none. `above` says above what they landed, `causeText` the clause of each cause: another kind of
// peak (`links`' link peaks, which have nothing to re-measure) says its own.
inline constexpr std::size_t kSuspectNames = 6;
std::string suspectWarning(const std::vector<SuspectFigure>& figures,
                           std::string_view above = "of their ceiling even after re-measuring it",
                           std::string_view (*causeText)(SuspectCause) = suspectCauseText);

}  // namespace ts
