#pragma once
// The record of one link measurement (kind "link"), shared by the host-memory, MPI and GPU tests: the
// runner (or links_gpu.cpp) fills it, toJson writes the schema's `link` record and links_table.h the
// console rows.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/kernels/roofline.h"
#include "bench/links/link_peaks.h"

namespace ts {

// The fields of the host-memory tests: whose memory, and how it was loaded.
struct HostMemoryFields {
  std::string host;
  std::uint64_t processes = 0;  // of this host, all running the kernel at once
  int threadsPerProcess = 0;
  std::uint64_t arrayBytes = 0;  // each of the three arrays, per process
};

// The fields of the MPI point-to-point tests: the pair's hosts and the messages sent.
struct MpiPairFields {
  std::string srcHost, dstHost;
  std::uint64_t messageBytes = 0;
  int window = 1;                               // messages in flight per sample
  int warmup = 0;                               // untimed samples first (round trips for latency, windows for bandwidth)
  int iterations = 0;                           // timed samples
  std::optional<std::uint64_t> deliveredBytes;  // bandwidth: what the receiver(s) got in the timed windows
};

struct LinkMeasurement {
  std::string test;               // host_memory_copy, mpi_latency, h2d, d2d_peer, ...
  std::string src, dst;           // "node-a", "rank 3", "cuda:0", "host"
  std::string engine;             // cpu | mpi | ce | sm
  std::string direction;          // uni | bi
  std::uint64_t bytes = 0;        // moved per sample (both directions together for bi)
  std::vector<double> samplesUs;  // the time of each sample (the slowest participant's)
  // The timed loop's wall time, when the bandwidth is the bytes of all samples over it (osu_bw's figure: the MPI
  // bandwidth tests) rather than bytes over the median sample.
  std::optional<double> totalUs;
  bool latency = false;  // report latency_us (the stats of samplesUs) instead of bandwidth
  LinkClass link;
  // Set (link_suspects.h's judgePeak) when the figure lands above the peak of its link: impossible for the link, so
  // something else was measured (cache, a planted fault); the record says ceiling_suspect, the console marks it !.
  std::optional<SuspectCause> suspect;
  long long wrong = 0;
  std::variant<std::monostate, HostMemoryFields, MpiPairFields> fields;  // the host-memory and MPI tests' own
  nlohmann::json extra = nlohmann::json::object();  // the GPU tests' own fields (host, memory kind, p2p, ...)
  std::string label, step;                          // "" = absent
};

nlohmann::json toJson(const LinkMeasurement& m);
// The bandwidth of a record, GB/s (bytes x samples / totalUs where totalUs is set, else bytes / median time), or
// nullopt for a latency record.
std::optional<double> bandwidthOf(const LinkMeasurement& m);
// The figure its console cell shows: the median time for a latency record, else the bandwidth (0 when none).
double figureOf(const LinkMeasurement& m);

}  // namespace ts
