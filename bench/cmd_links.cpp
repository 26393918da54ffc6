// `trainscope links`: the command line of the link tests.
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "bench/commands.h"
#include "bench/links_options.h"

namespace ts {

LinksOptions resolveLinksArgs(const LinksArgs& a) {
  LinksOptions o = a.opts;
  if (a.tests != "all") {
    o.memory = o.mpi = o.gpu = false;
    std::stringstream in(a.tests);
    std::string t;
    while (std::getline(in, t, ',')) {
      if (t == "memory") o.memory = true;
      else if (t == "mpi") o.mpi = true;
      else if (t == "gpu") o.gpu = true;
      else if (!t.empty()) throw UsageError(fmt::format("--tests: unknown test '{}' (all, or a comma list of memory, mpi, gpu)", t));
    }
  }
  o.memoryBytes = parseBytes(a.memoryBytes, "--memory-bytes");
  if (a.memoryBytes != "0" && o.memoryBytes == 0) throw UsageError("--memory-bytes must be positive (or 0 for automatic)");
  o.latencyBytes = parseBytes(a.latencyBytes, "--latency-bytes");
  o.bandwidthBytes = parseBytes(a.bandwidthBytes, "--bandwidth-bytes");
  o.copyBytes = parseBytes(a.copyBytes, "--copy-bytes");
  validate(o);
  return o;
}

Action addLinksCommand(CLI::App& app) {
  auto a = std::make_shared<LinksArgs>();
  auto& o = a->opts;
  CLI::App* sub = app.add_subcommand("links", "Measure links: host memory, MPI point-to-point between rank pairs, GPU copies and latencies");
  sub->add_option("--tests", a->tests, "all, or a comma list of memory, mpi, gpu")->capture_default_str();
  sub->add_option("--memory-bytes", a->memoryBytes, "Host memory: bytes per array and process (0 = 4x the last-level cache)")->capture_default_str();
  sub->add_option("--threads", o.threads, "Host memory: threads per process (0 = hardware threads / processes on the host)")->capture_default_str();
  sub->add_option("--latency-bytes", a->latencyBytes, "MPI ping-pong message size")->capture_default_str();
  sub->add_option("--bandwidth-bytes", a->bandwidthBytes, "MPI bandwidth message size")->capture_default_str();
  sub->add_option("--window", o.window, "MPI bandwidth: messages in flight per window (as osu_bw)")->capture_default_str();
  sub->add_option("--copy-bytes", a->copyBytes, "GPU copy size")->capture_default_str();
  sub->add_option("--gpus", o.gpus, "GPU indices to test, comma-separated (default: all visible)")->delimiter(',');
  sub->add_option("-w,--warmup", o.warmup, "Untimed iterations first")->capture_default_str();
  sub->add_option("-n,--iters", o.iters, "Timed iterations (bandwidth tests)")->capture_default_str();
  sub->add_option("--latency-iters", o.latencyIters, "Timed round trips (latency tests)")->capture_default_str();
  sub->add_option("--pairs", o.pairs, "ring, all, or a file of 'hostA hostB' lines")->capture_default_str();
  sub->add_option("--outlier-fraction", o.outlierFraction, "A pair is an outlier when this much worse than the median of its link type")->capture_default_str();
  sub->add_option("--timeout", o.timeoutS, "Seconds without progress before all ranks are stopped (0 = never)")->capture_default_str();
  sub->add_option("--json", o.jsonPath, "Write the result document here; records stream to the .jsonl beside it");
  sub->add_option("--label", o.label, "A label for this run");
  return [a](const std::vector<std::string>& argv) { return runLinks(resolveLinksArgs(*a), argv); };
}

}  // namespace ts
