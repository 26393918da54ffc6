// `trainscope links`: the option table of the link tests, their command line and their suite step.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "bench/commands.h"
#include "bench/links/links_options.h"
#include "bench/run_flags.h"
#include "comm/bootstrap.h"

namespace ts {

LinksOptions resolveLinksArgs(const LinksArgs& a) {
  LinksOptions o = a.opts;
  const auto asked = [&](LinkTest t) { return std::find(a.tests.begin(), a.tests.end(), t) != a.tests.end(); };
  o.memory = asked(LinkTest::kMemory);
  o.mpi = asked(LinkTest::kMpi);
  o.gpu = asked(LinkTest::kGpu);
  o.memoryBytes = parseBytes(a.memoryBytes, "--memory-bytes");
  if (a.memoryBytes != "0" && o.memoryBytes == 0) throw UsageError("--memory-bytes must be positive (or 0 for automatic)");
  o.latencyBytes = parseBytes(a.latencyBytes, "--latency-bytes");
  o.bandwidthBytes = parseBytes(a.bandwidthBytes, "--bandwidth-bytes");
  o.copyBytes = parseBytes(a.copyBytes, "--copy-bytes");
  validate(o);
  return o;
}

namespace {

const OptionTable<LinksArgs>& linksOptions() {
  static const OptionTable<LinksArgs> table = [] {
    OptionTable<LinksArgs> t;
    const auto opts = TS_FIELD(opts);
    t.group("What is measured");
    t.add("--tests", "all, or a comma list of " + option_detail::choiceList<LinkTest>(", "), TS_FIELD(tests));
    t.add("--memory-bytes", "Host memory: bytes per array and process (0 = 4x the last-level cache)", TS_FIELD(memoryBytes),
          TextForm::kSize);
    t.add("--threads", "Host memory: threads per process (0 = hardware threads / processes on the host)", TS_FIELD(opts.threads));
    t.add("--latency-bytes", "MPI ping-pong message size", TS_FIELD(latencyBytes), TextForm::kSize);
    t.add("--bandwidth-bytes", "MPI bandwidth message size", TS_FIELD(bandwidthBytes), TextForm::kSize);
    t.add("--window", "MPI bandwidth: messages in flight per window (as osu_bw)", TS_FIELD(opts.window));
    t.add("--copy-bytes", "GPU copy size", TS_FIELD(copyBytes), TextForm::kSize);
    t.add("--gpus", "GPU indices to test, comma-separated (default: all visible)", TS_FIELD(opts.gpus));
    t.group("How it is timed and judged");
    addWarmupFlag(t, opts);
    addItersFlag(t, opts, "Timed iterations (bandwidth tests)");
    t.add("--latency-iters", "Timed round trips (latency tests)", TS_FIELD(opts.latencyIters));
    t.add("--pairs", "ring, all, or a file of 'hostA hostB' lines", TS_FIELD(opts.pairs));
    t.add("--outlier-fraction", "A pair is an outlier when this much worse than the median of its link type",
          TS_FIELD(opts.outlierFraction))
        .range({0, 1, true, true});
    t.group("The run and its output");
    addTimeoutFlag(t, opts);
    addOutputFlags(t, opts);
    return t;
  }();
  return table;
}

SuiteStep readLinksStep(StepReader& r) {
  return tableStep(r, linksOptions(), resolveLinksArgs, runLinksStep,
                   [](const LinksOptions& o) { return o.mpi && launchedByMpi(); });
}

}  // namespace

Subcommand linksSubcommand() {
  return {"links", "Measure links: host memory, MPI point-to-point between rank pairs, GPU copies and latencies",
          [](CLI::App& sub) {
            return addTable<LinksArgs>(sub, linksOptions(), std::make_shared<LinksArgs>(),
                                       [](const LinksArgs& a, const std::vector<std::string>& argv) {
                                         return runLinks(resolveRecorded(linksOptions(), a, resolveLinksArgs), argv);
                                       });
          },
          readLinksStep, linksOptions().describe()};
}

}  // namespace ts
