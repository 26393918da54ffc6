#pragma once
// What `trainscope links` was asked to do (links_command.cpp fills it; links_runner.cpp runs it).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "bench/failures/default_timeout.h"

namespace ts {

struct RunContext;

// What `links --tests` chooses among.
enum class LinkTest { kMemory, kMpi, kGpu };
template <>
struct EnumNames<LinkTest> {
  static constexpr std::pair<std::string_view, LinkTest> kNames[] = {
      {"memory", LinkTest::kMemory}, {"mpi", LinkTest::kMpi}, {"gpu", LinkTest::kGpu}};
};

struct LinksOptions {
  bool memory = true;             // host memory bandwidth (STREAM-like), every host
  bool mpi = true;                // MPI point-to-point between rank pairs (under mpirun, 2+ ranks)
  bool gpu = true;                // GPU copies and latencies (where GPUs are)
  std::uint64_t memoryBytes = 0;  // per array and process; 0 = 4x the last-level cache shared among the host's processes
  int threads = 0;                // per process; 0 = hardware threads / processes on the host
  std::uint64_t latencyBytes = 8;
  std::uint64_t bandwidthBytes = 4ull << 20;
  std::uint64_t copyBytes = 256ull << 20;  // GPU copies
  std::vector<int> gpus;                   // GPU indices to test (empty = all visible)
  int window = 64;
  int warmup = 5;
  int iters = 20;
  int latencyIters = 1000;
  std::string pairs = "ring";  // ring | all | a file of "hostA hostB" lines
  double outlierFraction = 0.2;
  double timeoutS = kDefaultTimeoutS;
  std::string jsonPath;
  std::string label;
  // The options as given (the option table's record of the arguments, resolveRecorded): the run's config, to which
  // toJson adds what they resolved to.
  nlohmann::json given = nlohmann::json::object();
};

// The options as written (command line or suite file), sizes as text.
struct LinksArgs {
  std::vector<LinkTest> tests = {LinkTest::kMemory, LinkTest::kMpi, LinkTest::kGpu};
  std::string memoryBytes = "0", latencyBytes = "8", bandwidthBytes = "4M", copyBytes = "256M";
  LinksOptions opts;
};
LinksOptions resolveLinksArgs(const LinksArgs& args);  // links_command.cpp; UsageError naming the option

// The run's config: the options as given (`given`, under their suite keys) and, under "resolved", what resolving them
// decided (the options the runner takes that differ from the text given: lists, sizes in bytes, auto choices).
nlohmann::json toJson(const LinksOptions& o);
void validate(const LinksOptions& o);
// Rank pairs to measure among `hosts` (one host name per rank, in rank order). UsageError for a pair file
// that names an unknown host or is malformed.
std::vector<std::pair<int, int>> linkPairs(const std::string& spec, const std::vector<std::string>& hosts);
// The same for the text of a pair file, which may be anything; `spec` names it in errors.
std::vector<std::pair<int, int>> linkPairsFromText(std::string_view text, const std::string& spec,
                                                   const std::vector<std::string>& hosts);

std::size_t runLinksStep(const LinksOptions& o, RunContext& ctx);  // returns the number of failed checks
int runLinks(const LinksOptions& o, const std::vector<std::string>& argv);

}  // namespace ts
