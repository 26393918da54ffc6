#pragma once
// The console tables of `trainscope links` (host memory, MPI point-to-point, their outliers), each row
// rendered from its records. The GPU tests print their own tables (links_gpu.cpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/links/link_outliers.h"
#include "bench/links/link_record.h"

namespace ts {

struct LinksOptions;

std::string hostMemoryTableHeader(std::uint64_t arrayBytes, int threadsPerProcess);
// A host-memory record (its HostMemoryFields set).
std::string hostMemoryTableRow(const LinkMeasurement& m);

std::string mpiPairsTableHeader(const LinksOptions& o, std::size_t pairs);
// The latency, bandwidth and bidirectional bandwidth records of one pair (their MpiPairFields set), ranks a and b.
std::string mpiPairsTableRow(int a, int b, const std::array<LinkMeasurement, 3>& tests);

// One "# outlier: ..." line per outlier of the record; "" without any.
std::string outlierLines(const LinkOutliersRecord& r);

}  // namespace ts
