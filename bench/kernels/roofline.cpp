#include "bench/kernels/roofline.h"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ts {

std::string_view ceilingKindName(CeilingKind k) { return k == CeilingKind::kCompute ? "compute" : "memory"; }

namespace {

struct LevelNames {
  std::string_view record, label;
};

LevelNames levelNames(MemoryLevel l) {
  switch (l) {
    case MemoryLevel::kL1:
      return {"l1", "L1"};
    case MemoryLevel::kL2:
      return {"l2", "L2"};
    case MemoryLevel::kL3:
      return {"l3", "L3"};
    case MemoryLevel::kDram:
      return {"dram", "DRAM"};
  }
  return {"dram", "DRAM"};
}

}  // namespace

std::string_view memoryLevelName(MemoryLevel l) { return levelNames(l).record; }
std::string_view memoryLevelLabel(MemoryLevel l) { return levelNames(l).label; }

const MemoryCeiling& memoryCeilingFor(const std::vector<MemoryCeiling>& levels, double bytes, bool cachesWarm) {
  if (cachesWarm)
    for (const MemoryCeiling& m : levels)
      if (bytes <= m.capacityBytes) return m;
  return levels.back();
}

std::optional<double> cacheCopyWorkingSet(double previousCapacity, double capacity) {
  if (!(capacity > previousCapacity)) return std::nullopt;
  const double half = capacity / 2;
  return half > previousCapacity ? half : (previousCapacity + capacity) / 2;
}

RooflinePlace placeOnRoofline(double tflops, double intensity, double computeTflops, double memoryGbps) {
  const double memoryRoof = intensity * memoryGbps / 1e3;  // TFLOP/s the memory ceiling allows
  RooflinePlace p;
  p.bound = memoryRoof >= computeTflops ? CeilingKind::kCompute : CeilingKind::kMemory;
  p.attainableTflops = std::min(computeTflops, memoryRoof);
  p.fraction = tflops / p.attainableTflops;
  return p;
}

std::string_view suspectCauseName(SuspectCause c) {
  switch (c) {
    case SuspectCause::kPlantedFault:
      return "planted_fault";
    case SuspectCause::kBusyHost:
      return "busy_host";
    case SuspectCause::kCacheResidency:
      return "cache_residency";
    case SuspectCause::kUnexplained:
      return "unexplained";
    case SuspectCause::kDatasheetMismatch:
      return "datasheet_mismatch";
  }
  return "unexplained";
}

SuspectCause suspectCauseFromName(std::string_view name) {
  for (SuspectCause c :
       {SuspectCause::kPlantedFault, SuspectCause::kBusyHost, SuspectCause::kCacheResidency, SuspectCause::kDatasheetMismatch})
    if (suspectCauseName(c) == name) return c;
  return SuspectCause::kUnexplained;
}

std::string_view suspectCauseText(SuspectCause c) {
  switch (c) {
    case SuspectCause::kPlantedFault:
      return "a planted fault (TRAINSCOPE_FAULT=ceiling) scaled the ceilings down";
    case SuspectCause::kBusyHost:
      return "other processes took a good share of the CPUs while the ceiling was measured (a multi-threaded ceiling loses more "
             "to a "
             "busy core than a small kernel on one core does); measure on an idle host";
    case SuspectCause::kCacheResidency:
      return "the data sat in a nearer cache level than the kernel's bytes chose";
    case SuspectCause::kUnexplained:
      return "no cause found (a clock change between the ceiling and the kernel?)";
    case SuspectCause::kDatasheetMismatch:
      return "the datasheet entry or the SM clock read does not fit this GPU (another variant of it?)";
  }
  return "";
}

SuspectCause likelySuspectCause(bool planted, std::optional<double> othersCpuFraction, CeilingKind bound) {
  if (planted) return SuspectCause::kPlantedFault;
  if (othersCpuFraction && *othersCpuFraction >= kBusyHostFraction) return SuspectCause::kBusyHost;
  if (bound == CeilingKind::kMemory) return SuspectCause::kCacheResidency;
  return SuspectCause::kUnexplained;
}

std::string suspectWarning(const std::vector<SuspectFigure>& figures, std::string_view above,
                           std::string_view (*causeText)(SuspectCause)) {
  if (figures.empty()) return "";
  std::map<SuspectCause, std::vector<const SuspectFigure*>> byCause;
  for (const SuspectFigure& f : figures) byCause[f.cause].push_back(&f);
  std::string line = fmt::format("# warning: {} figure(s) above 100% {} (marked ! and ceiling_suspect)", figures.size(), above);
  for (const auto& [cause, list] : byCause) {
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < list.size() && i < kSuspectNames; ++i)
      shown.push_back(fmt::format("{} ({:.0f}%)", list[i]->name, 100 * list[i]->fraction));
    std::string names = fmt::format("{}", fmt::join(shown, ", "));
    if (list.size() > kSuspectNames) names += fmt::format(" and {} more", list.size() - kSuspectNames);
    line += fmt::format("; {}: likely cause: {}", names, causeText(cause));
  }
  return line;
}

}  // namespace ts
