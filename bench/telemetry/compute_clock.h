#pragma once
// The clock compute runs at now, which MFU and roofline fractions state beside themselves: a GPU's SM
// clock (NVML; else the CUDA runtime's maximum), or the CPUs' mean current frequency (/sys, where the
// kernel exposes cpufreq; containers and some VMs do not). Unknown is null, never a guess.
#include <optional>

#include <nlohmann/json.hpp>

namespace ts {

std::optional<double> cpuFrequencyMhz();
std::optional<double> gpuSmClockMhz(int cudaOrdinal);
// The CUDA device's SM clock for an ordinal >= 0, the CPU frequency for -1; nullopt where unknown.
std::optional<double> readComputeClockMhz(int cudaOrdinal);
// The same as a record writes it: a number or null.
nlohmann::json computeClockMhz(int cudaOrdinal);

}  // namespace ts
