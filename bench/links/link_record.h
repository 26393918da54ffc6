#pragma once
// The record of one link measurement (kind "link"), shared by the host-memory, MPI and GPU tests.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/links/link_peaks.h"

namespace ts {

struct LinkMeasurement {
  std::string test;       // host_memory_copy, mpi_latency, h2d, d2d_peer, ...
  std::string src, dst;   // "node-a", "rank 3", "cuda:0", "host"
  std::string engine;     // cpu | mpi | ce | sm
  std::string direction;  // uni | bi
  std::uint64_t bytes = 0;           // moved per sample (both directions together for bi)
  std::vector<double> samplesUs;     // the time of each sample (the slowest participant's)
  bool latency = false;              // report latency_us (the stats of samplesUs) instead of bandwidth
  LinkClass link;
  long long wrong = 0;
  nlohmann::json extra = nlohmann::json::object();  // test-specific fields (hosts, memory kind, p2p, ...)
};

nlohmann::json toRecord(const LinkMeasurement& m, const std::string& label);
// The bandwidth of a record, GB/s (bytes / median time), or nullopt for a latency record.
std::optional<double> bandwidthOf(const LinkMeasurement& m);

}  // namespace ts
