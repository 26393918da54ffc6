// The driver of `trainscope collectives`: for each op, dtype, reduction, size and placement, check the
// result (untimed), warm up, time the iterations, reduce the timings over ranks (the slowest rank per
// iteration), and emit one record. Everything op-specific comes from the op's file in comm/collectives.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/units.h"
#include "bench/collectives/cache_flush.h"
#include "bench/collectives/collective_record.h"
#include "bench/collectives/collectives_options.h"
#include "bench/collectives/collectives_table.h"
#include "bench/failures/activity.h"
#include "bench/failures/agreement.h"
#include "bench/failures/fault_injection.h"
#include "bench/failures/watchdog.h"
#include "bench/inventory/inventory.h"
#include "bench/results/result_writer.h"
#include "bench/results/stats.h"
#include "bench/run/progress.h"
#include "bench/run/run_metadata.h"
#include "bench/run/run_session.h"
#include "bench/run/trace_files.h"
#include "comm/collectives/check.h"
#include "kernels/trace.h"

namespace ts {
namespace {

constexpr unsigned char kPoison = 0xff;  // NaN in every float type, -1/255 in the integers: never an expected value
// The host staging buffer of the result check: inputs and outputs pass through it in pieces of this size, so
// that a sweep's memory is its two communication buffers plus a constant (issue #40: a whole-size staging
// buffer made a sweep to 256 MiB peak at 3.4x its largest message).
constexpr std::size_t kStagingBytes = std::size_t{4} << 20;

std::uint64_t availableHostMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

// What sets a section apart besides op, dtype and reduction: reduce_scatter's MPI call (--mpi-reduce-scatter), the
// call's form (--issue) and the caches it starts from (--cache).
struct SectionVariant {
  std::optional<MpiReduceScatter> call;
  IssueKind issue = IssueKind::kBlocking;
  CacheState cache = CacheState::kHot;
  bool perPairCounts = false;  // alltoallv: its counts (--alltoallv-counts) are named
};

// "gather, scatter": the ops' names, for the header's notes.
std::string namesOf(const std::vector<const Collective*>& ops) {
  std::vector<std::string_view> names;
  for (const Collective* c : ops) names.push_back(c->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

struct Placement {
  void* send;
  void* recv;
  std::size_t extentElems;  // of buffer A that the call touches (in-place), for poisoning
};

class CollectivesRun {
 public:
  // `exchange`: alltoallv's per-pair counts on this world (--alltoallv-counts).
  CollectivesRun(const CollectivesOptions& o, Bootstrap& boot, Communicator& comm, std::optional<Fault> fault,
                 std::shared_ptr<const ExchangeMatrix> exchange)
      : o_(o), boot_(boot), comm_(comm), fault_(std::move(fault)), exchange_(std::move(exchange)) {}

  // The --timeout guard; set before run().
  void setWatchdog(std::unique_ptr<Watchdog> w) { watchdog_ = std::move(w); }

  void allocate() {
    const std::size_t bytes = (o_.maxBytes + 4095) / 4096 * 4096;
    // Host memory: both communication buffers on the MPI backend, and the staging buffer; all processes
    // of a host share it.
    const auto hosts = boot_.allGatherStrings(hostName());
    const auto here = static_cast<std::uint64_t>(std::count(hosts.begin(), hosts.end(), hostName()));
    const std::uint64_t perProcess = bytes * (comm_.backend() == BackendKind::kMpi ? 2 : 0) + kStagingBytes;
    const std::uint64_t avail = availableHostMemory();
    if (avail && perProcess * here > avail)
      throw UsageError(
          fmt::format("-e/--max-bytes {} needs {} of host memory per process ({} processes on {}), but {} is available",
                      formatBytes(o_.maxBytes), formatBytes(perProcess), here, hostName(), formatBytes(avail)));
    ErrorContext ctx(fmt::format("allocating buffers for -e/--max-bytes {}", formatBytes(o_.maxBytes)));
    for (int l = 0; l < comm_.localCount(); ++l) {
      a_.emplace_back(comm_, l, bytes);
      b_.emplace_back(comm_, l, bytes);
    }
    host_.assign(kStagingBytes, 0);
  }

  // Runs the sweep, adding each record to `writer` (process 0 only); returns the number of wrong elements.
  std::size_t run(ResultWriter* writer, const std::string& step) {
    const bool leader = boot_.rank() == 0;
    double total = 0;
    for (auto* c : o_.ops)
      for (DType t : o_.dtypes)
        for (const CollectiveLayout& lay : layoutsOf(*c, t))
          total += weight(lay.bytes) * static_cast<double>((c->reduces() ? o_.redops.size() : 1) * variantsOf(*c).size());
    Progress progress("collectives", total, leader);
    if (leader) printHeader();
    std::size_t wrongTotal = 0;
    std::vector<std::string> failures;
    for (const Collective* c : o_.ops)
      for (DType t : o_.dtypes)
        for (RedOp r : c->reduces() ? o_.redops : std::vector<RedOp>{RedOp::kSum})
          for (const SectionVariant& v : variantsOf(*c)) {
            CollectiveArgs args{t, r, o_.root, comm_.worldSize()};
            if (v.call) args.mpiReduceScatter = *v.call;
            if (c->perPairCounts()) args.exchange = exchange_;
            wrongTotal += runSection(*c, args, v, progress, writer, step, failures);
          }
    progress.done();
    activity::set("");
    if (leader)
      for (const auto& f : failures) std::fprintf(stderr, "trainscope: error: result check failed: %s\n", f.c_str());
    return wrongTotal;
  }

 private:
  void printHeader() const {
    std::printf("# trainscope collectives: backend %s, %d ranks (%d processes x %d), timer %s\n", nameOf(comm_.backend()).data(),
                comm_.worldSize(), boot_.size(), comm_.localCount(), nameOf(comm_.timer()).data());
    const std::string large = o_.largeBytes ? fmt::format(" (from {} on: warmup {}, {} iterations)", formatBytes(o_.largeBytes),
                                                          o_.largeWarmup, o_.largeIters)
                                            : "";
    std::printf("# warmup %d, %d iterations x %d trials%s, time = median of the slowest rank, check %s%s\n", o_.warmup, o_.iters,
                o_.trials, large.c_str(), o_.check ? "on" : "off",
                o_.graph ? fmt::format(", CUDA graph of {} ops", o_.graph).c_str() : "");
    if (comm_.worldSize() == 1) std::printf("%s", oneRankNotice().c_str());
    if (!o_.opsLeftOut.empty())
      std::printf("# --ops all: left out %s, which the %s backend does not run\n", namesOf(o_.opsLeftOut).c_str(),
                  nameOf(comm_.backend()).data());
    if (!o_.opsBlockingOnly.empty())
      std::printf(
          "# --issue %s: %s %s (no nonblocking MPI call)\n", nameOf(o_.issue).data(),
          o_.issue == IssueChoice::kNonblocking ? "left out" : "measured blocking only:", namesOf(o_.opsBlockingOnly).c_str());
    std::fflush(stdout);
  }

  std::vector<CollectiveLayout> layoutsOf(const Collective& c, DType t) const {
    return sweepLayouts(c, sweepSizes(o_, dtypeSize(t)), dtypeSize(t), comm_.worldSize(),
                        c.perPairCounts() ? exchange_.get() : nullptr);
  }

  // The MPI calls `c` is measured with, each a section: reduce_scatter's on the MPI backend
  // (--mpi-reduce-scatter); one nullopt for the ops (and the backend) with one call.
  std::vector<std::optional<MpiReduceScatter>> mpiCallsOf(const Collective& c) const {
    if (&c != &collectives::reduce_scatter() || comm_.backend() != BackendKind::kMpi) return {std::nullopt};
    const std::vector<MpiReduceScatter> calls = mpiReduceScatterCalls(o_.mpiReduceScatter);
    return {calls.begin(), calls.end()};
  }

  // The forms of its calls `c` is measured in (--issue), each a section: on MPI those asked that it has (fitOpsToIssue
  // left out an op with none); the one form of a backend that has one.
  std::vector<IssueKind> issuesOf(const Collective& c) const {
    if (comm_.backend() != BackendKind::kMpi) return {IssueKind::kBlocking};
    std::vector<IssueKind> out;
    for (const IssueKind k : issueKinds(o_.issue))
      if (k == IssueKind::kBlocking || c.startsOnMpi()) out.push_back(k);
    return out;
  }

  std::vector<SectionVariant> variantsOf(const Collective& c) const {
    std::vector<SectionVariant> out;
    for (const std::optional<MpiReduceScatter> call : mpiCallsOf(c))
      for (const IssueKind issue : issuesOf(c))
        for (const CacheState cache : cacheStates(o_.cache)) out.push_back({call, issue, cache, c.perPairCounts()});
    return out;
  }

  // What sets a section apart besides op, dtype and reduction, as the command line chooses it; "" if nothing. The
  // form is named whenever --issue asked for more than the default.
  std::string variantOf(const SectionVariant& v) const {
    std::vector<std::string> parts;
    if (v.call) parts.push_back(fmt::format("--mpi-reduce-scatter {}", nameOf(*v.call)));
    if (o_.issue != IssueChoice::kBlocking) parts.push_back(fmt::format("--issue {}", nameOf(v.issue)));
    if (o_.cache != CacheChoice::kHot) parts.push_back(fmt::format("--cache {}", nameOf(v.cache)));
    if (v.perPairCounts) parts.push_back(fmt::format("--alltoallv-counts {}", spelled(o_.alltoallvCounts)));
    return fmt::format("{}", fmt::join(parts, " "));
  }

  // Progress weighs each size by the bytes it moves plus a fixed cost, so the estimate holds for sweeps
  // whose time is all in the largest sizes.
  static double weight(std::uint64_t bytes) { return static_cast<double>(bytes) + 65536.0; }

  bool runsPlacement(const Collective& c, bool inPlace) const {
    if (inPlace) return measuresInPlace(o_.placement) && comm_.supportsInPlace(c);
    return measuresOutOfPlace(o_.placement);
  }

  // One section of the table (an op, dtype, reduction and MPI call over every size); returns its wrong
  // elements and adds a line per failed check to `failures`.
  std::size_t runSection(const Collective& c, const CollectiveArgs& args, const SectionVariant& v, Progress& progress,
                         ResultWriter* writer, const std::string& step, std::vector<std::string>& failures) {
    const bool leader = boot_.rank() == 0;
    const std::string redop = c.reduces() ? std::string(redOpName(args.redop)) : "";
    const std::string variant = variantOf(v);
    if (leader)
      std::printf("%s",
                  collectivesTableHeader(std::string(c.name()), std::string(dtypeName(args.dtype)), redop, variant).c_str());
    double busbwSum = 0;
    int busbwN = 0;
    std::size_t sectionWrong = 0;
    for (const CollectiveLayout& lay : layoutsOf(c, args.dtype)) {
      progress.step(fmt::format("{} {} {}", c.name(), dtypeName(args.dtype), formatBytes(lay.bytes)), weight(lay.bytes));
      std::optional<CollectiveRecord> recs[2];
      for (int p = 0; p < 2; ++p) {
        const bool inPlace = p == 1;
        if (!runsPlacement(c, inPlace)) continue;
        CollectiveRecord& rec = recs[p].emplace(measure(c, args, v, lay, inPlace));
        rec.step = step;
        if (rec.wrong)
          failures.push_back(fmt::format("{} {} {}{} {}{}: {} wrong element(s)", c.name(), dtypeName(args.dtype),
                                         redop.empty() ? "" : redop + " ", formatBytes(lay.bytes),
                                         inPlace ? "in-place" : "out-of-place", variant.empty() ? "" : " " + variant, rec.wrong));
        sectionWrong += static_cast<std::size_t>(rec.wrong);
        busbwSum += rec.busbwGbps;
        ++busbwN;
        if (leader && writer) writer->add(toJson(rec));
      }
      if (leader && (recs[0] || recs[1])) {
        progress.done();
        std::printf("%s", collectivesTableRow(recs[0], recs[1]).c_str());
        std::fflush(stdout);
      }
    }
    if (leader)
      std::printf("%s", collectivesTableFooter(busbwN ? busbwSum / busbwN : 0, sectionWrong, comm_.worldSize()).c_str());
    return sectionWrong;
  }

  Placement placement(int l, const Collective& c, const CollectiveLayout& lay, DType t, bool inPlace) const {
    char* A = static_cast<char*>(a_[l].get());
    char* B = static_cast<char*>(b_[l].get());
    if (!inPlace) return {A, B, 0};
    const InPlaceGeometry g = c.inPlace(comm_.rank(l), lay);
    const std::size_t elt = dtypeSize(t);
    const std::size_t extent = g.outputInsideInput ? std::max(lay.sendElems, g.offsetElems + lay.recvElems)
                                                   : std::max(lay.recvElems, g.offsetElems + lay.sendElems);
    if (g.outputInsideInput) return {A, A + g.offsetElems * elt, extent};
    return {A + g.offsetElems * elt, A, extent};
  }

  std::string describe(const Collective& c, const CollectiveArgs& a, const SectionVariant& v, const CollectiveLayout& lay,
                       bool inPlace) const {
    const std::string variant = variantOf(v);
    return fmt::format("{} {} ({} x {}{}{}, {}{})", c.name(), formatBytes(lay.bytes), lay.count, dtypeName(a.dtype),
                       c.reduces() ? fmt::format(" {}", redOpName(a.redop)) : "",
                       c.rooted() ? fmt::format(", root {}", a.root) : "", inPlace ? "in-place" : "out-of-place",
                       variant.empty() ? "" : ", " + variant);
  }

  // The pieces of `elems` elements of `elt` bytes that the staging buffer holds, in order.
  static std::vector<ElementRange> piecesOf(std::size_t elems, std::size_t elt) {
    const std::size_t per = kStagingBytes / elt;
    std::vector<ElementRange> out;
    for (std::size_t b = 0; b < elems; b += per) out.push_back({b, std::min(elems, b + per)});
    return out;
  }

  // Writes kPoison over `elems` elements of local rank l's buffer at `dst`, through the staging buffer.
  void poison(int l, void* dst, std::size_t elems, std::size_t elt) {
    std::memset(host_.data(), kPoison, host_.size());
    for (const ElementRange r : piecesOf(elems, elt))
      comm_.copyIn(l, static_cast<char*>(dst) + r.begin * elt, host_.data(), (r.end - r.begin) * elt);
  }

  // Fills inputs over poisoned outputs, runs the op once, and counts wrong elements on this process.
  std::size_t checkOnce(const Collective& c, const CollectiveArgs& a, const CollectiveLayout& lay, bool inPlace,
                        const std::optional<Fault>& fault, const std::function<void()>& launch) {
    const std::size_t elt = dtypeSize(a.dtype);
    for (int l = 0; l < comm_.localCount(); ++l) {
      const Placement p = placement(l, c, lay, a.dtype, inPlace);
      if (inPlace)
        poison(l, a_[l].get(), p.extentElems, elt);
      else
        poison(l, p.recv, lay.recvElems, elt);
      for (const ElementRange r : piecesOf(lay.sendElems, elt)) {
        fillInput(c, a, comm_.rank(l), lay, host_.data(), r);
        comm_.copyIn(l, static_cast<char*>(p.send) + r.begin * elt, host_.data(), (r.end - r.begin) * elt);
      }
    }
    launch();
    comm_.synchronize(0);  // the watchdog times it, and speaks for this process if the peers never come
    std::size_t wrong = 0;
    for (int l = 0; l < comm_.localCount(); ++l) {
      const Placement p = placement(l, c, lay, a.dtype, inPlace);
      const bool corrupt =
          fault && fault->kind == Fault::Kind::kCorrupt && fault->matches(comm_.rank(l), std::string(c.name()), lay.bytes);
      bool planted = false;
      CheckResult mine;
      for (const ElementRange r : piecesOf(lay.recvElems, elt)) {
        comm_.copyOut(l, host_.data(), static_cast<const char*>(p.recv) + r.begin * elt, (r.end - r.begin) * elt);
        for (std::size_t i = r.begin; corrupt && !planted && i < r.end; ++i) {
          if (!c.expected(a, comm_.rank(l), i, lay)) continue;
          const std::size_t at = i - r.begin;  // the planted wrong element
          storeElement(host_.data(), a.dtype, at, loadElement(host_.data(), a.dtype, at) + 1);
          planted = true;
        }
        addPiece(mine, checkOutput(c, a, comm_.rank(l), lay, host_.data(), r));
      }
      wrong += mine.wrong;
    }
    return wrong;
  }

  // The timed samples of this process: one per iteration, and the host's time per op of each batch.
  struct Timings {
    std::vector<double> us, hostUs;
  };

  // The warm-up runs `op` without its planted fault; the trials run it as given.
  Timings timeIterations(const IterationCounts& n, const TimedOp& op) {
    Timings out;
    WatchdogScope guard(*watchdog_);
    if (n.warmup > 0) {
      trace::Span warm("warm-up", trace::Role::kCommunication);
      comm_.timeBatch(n.warmup, o_.graph, TimedOp{op.calls, {}});
    }
    for (int t = 0; t < o_.trials; ++t) {
      trace::Span trial("trial", trace::Role::kCommunication, t);
      const TimedBatch b = comm_.timeBatch(n.iters, o_.graph, op);
      out.us.insert(out.us.end(), b.opUs.begin(), b.opUs.end());
      out.hostUs.push_back(b.hostUsPerOp);
    }
    return out;
  }

  // The empty-op baseline: the same timed loop, as many iterations, around no operation; what of each sample
  // is the harness's own (the clock reads; on NCCL the events between iterations).
  std::vector<double> timeEmptyOp(const IterationCounts& n) {
    WatchdogScope guard(*watchdog_);
    trace::Span empty("empty-op baseline", trace::Role::kCommunication);
    return comm_.timeBatch(n.iters, 0, TimedOp{}).opUs;
  }

  // The empty-op baseline of a loop of n.iters, timed once a run for each count rather than beside every record (on
  // NCCL two events a call). The counts follow from the options and the size alone, so every rank times and gathers
  // it at the same record.
  const Stats& emptyOpBaseline(const IterationCounts& n) {
    auto it = emptyOp_.find(n.iters);
    if (it == emptyOp_.end())
      it = emptyOp_.emplace(n.iters, summarize(slowestOverProcesses({timeEmptyOp(n), {}}).slowest.us)).first;
    return it->second;
  }

  // The slowest process per iteration sets the time; each process's median shows the spread.
  struct OverProcesses {
    Timings slowest;
    RankSpread spread;
  };

  OverProcesses slowestOverProcesses(const Timings& mine) {
    const std::size_t n = mine.us.size(), nh = mine.hostUs.size();
    const auto all = boot_.allGatherDoubles(mine.us);
    const auto allHost = boot_.allGatherDoubles(mine.hostUs);
    OverProcesses out;
    out.slowest.us.assign(n, 0.0);
    out.slowest.hostUs.assign(nh, 0.0);
    for (int p = 0; p < boot_.size(); ++p) {
      const std::vector<double> theirs(all.begin() + p * n, all.begin() + (p + 1) * n);
      for (std::size_t i = 0; i < n; ++i) out.slowest.us[i] = std::max(out.slowest.us[i], theirs[i]);
      for (std::size_t i = 0; i < nh; ++i) out.slowest.hostUs[i] = std::max(out.slowest.hostUs[i], allHost[p * nh + i]);
      const Stats stats = summarize(theirs);
      const double med = stats.median;
      RankSpread& s = out.spread;
      s.meanOfProcessMeansUs += stats.mean / boot_.size();
      if (p == 0 || med < s.fastestMedianUs) {
        s.fastestMedianUs = med;
        s.fastest = p;
      }
      if (p == 0 || med > s.slowestMedianUs) {
        s.slowestMedianUs = med;
        s.slowest = p;
      }
    }
    return out;
  }

  // The check's one run of `op`, in the form the timed loop issues it: the blocking calls between groupStart and
  // groupEnd, or each call's nonblocking form waited for at once (Communicator::start, as training waits for its
  // collectives), so that the result checked is that of the calls timed.
  std::function<void()> launcherOf(const TimedOp& op) {
    return [this, &op] {
      if (op.issue == IssueKind::kNonblocking) {
        for (int l = 0; l < comm_.localCount(); ++l) comm_.start(l, op.calls[static_cast<std::size_t>(l)])->wait(0);
        return;
      }
      comm_.groupStart();
      for (int l = 0; l < comm_.localCount(); ++l) comm_.run(l, op.calls[static_cast<std::size_t>(l)]);
      comm_.groupEnd();
    };
  }

  CollectiveRecord measure(const Collective& c, const CollectiveArgs& a, const SectionVariant& v, const CollectiveLayout& lay,
                           bool inPlace) {
    const std::string what = describe(c, a, v, lay, inPlace);
    activity::set(what);
    ErrorContext ctx(what);
    trace::Span span(what, trace::Role::kCommunication);  // and its NVTX range
    if (trace::enabled()) span.annotate({{"bytes", lay.bytes}, {"op", std::string(c.name())}, {"ranks", comm_.worldSize()}});

    TimedOp op;
    op.issue = v.issue;
    for (int l = 0; l < comm_.localCount(); ++l) {
      const Placement p = placement(l, c, lay, a.dtype, inPlace);
      op.calls.push_back(c.call(comm_.rank(l), p.send, p.recv, lay, a));
    }
    // A planted fault (tests only) acts before each timed iteration, outside the timed region; so does --cache
    // cold's flush, after it.
    std::function<void()> fault;
    for (int l = 0; l < comm_.localCount(); ++l)
      if (fault_ && fault_->inOperation() && fault_->matches(comm_.rank(l), std::string(c.name()), lay.bytes))
        fault = [f = *fault_] { injectInOperation(f); };
    op.beforeEach = fault;
    if (v.cache == CacheState::kCold)
      op.beforeEach = [this, fault] {
        if (fault) fault();
        flush_.run();
      };

    long long wrong = 0;
    if (o_.check) {
      trace::Span checking("check", trace::Role::kCommunication);
      WatchdogScope guard(*watchdog_);
      wrong = boot_.sum(static_cast<long long>(checkOnce(c, a, lay, inPlace, fault_, launcherOf(op))));
    }
    const IterationCounts counts = iterationsAt(o_, lay.bytes);
    CollectiveRecord r = recordOf(c, a, v, lay, inPlace, counts, slowestOverProcesses(timeIterations(counts, op)));
    r.wrong = wrong;
    return r;
  }

  // The record of one measurement, from what was measured and the iterations' times over the processes.
  CollectiveRecord recordOf(const Collective& c, const CollectiveArgs& a, const SectionVariant& v, const CollectiveLayout& lay,
                            bool inPlace, const IterationCounts& counts, const OverProcesses& over) {
    CollectiveRecord r;
    r.op = std::string(c.name());
    r.backend = comm_.backend();
    r.timer = comm_.timer();
    r.dtype = a.dtype;
    if (c.reduces()) r.redop = a.redop;
    if (c.rooted()) r.root = a.root;
    r.ranks = comm_.worldSize();
    r.processes = boot_.size();
    r.bytes = lay.bytes;
    r.count = lay.count;
    r.inPlace = inPlace;
    r.mpiReduceScatter = v.call;
    if (a.exchange) r.alltoallvCounts = toJson(o_.alltoallvCounts, *a.exchange);
    if (comm_.backend() == BackendKind::kMpi) {
      r.issue = v.issue;
      r.cache = v.cache;
    }
    r.graph = o_.graph;
    r.iters = counts.iters;
    r.trials = o_.trials;
    r.time = summarize(over.slowest.us);
    r.hostTime = summarize(over.slowest.hostUs);
    r.samplesUs = over.slowest.us;
    r.emptyOpTime = emptyOpBaseline(counts);
    r.algbwGbps = r.time.median > 0 ? static_cast<double>(lay.bytes) / (r.time.median * 1e-6) / 1e9 : 0;
    r.busFactor = c.busFactor(comm_.worldSize());
    r.busbwGbps = r.algbwGbps * r.busFactor;
    r.spread = over.spread;
    r.checked = o_.check;
    r.label = o_.label;
    return r;
  }

 private:
  const CollectivesOptions& o_;
  Bootstrap& boot_;
  Communicator& comm_;
  std::optional<Fault> fault_;
  CacheFlush flush_{kCacheFlushBytes};  // --cache cold's, written before each timed iteration
  std::shared_ptr<const ExchangeMatrix> exchange_;
  std::unique_ptr<Watchdog> watchdog_;
  std::map<int, Stats> emptyOp_;  // the empty-op baseline by iteration count (emptyOpBaseline)
  std::vector<CommBuffer> a_, b_;
  std::vector<unsigned char> host_;
};

}  // namespace

std::size_t runCollectivesStep(const CollectivesOptions& o, RunContext& ctx) {
  Bootstrap& boot = ctx.boot;
  std::unique_ptr<Communicator> comm;
  collectively(boot, [&] {
    CommunicatorOptions co;
    co.backend = o.backend;
    co.gpus = o.gpus;
    activity::set(fmt::format("creating the {} communicator", nameOf(resolveBackend(o.backend))));
    comm = makeCommunicator(co, boot);
  });
  collectively(boot, [&] {
    if (o.root >= comm->worldSize())
      throw UsageError(fmt::format("-r/--root {} is outside the world of {} rank(s)", o.root, comm->worldSize()));
    if (o.graph > 0 && comm->backend() != BackendKind::kNccl) throw UsageError("-G/--graph needs --backend nccl (CUDA graphs)");
    for (auto* c : o.ops)
      for (DType t : o.dtypes)
        for (RedOp r : o.redops) {
          std::string why;
          if (!comm->supports(*c, t, r, &why)) throw UsageError(fmt::format("{}: {}", c->name(), why));
        }
  });
  std::optional<Fault> fault;
  collectively(boot, [&] { fault = faultFromEnvironment(); });
  std::shared_ptr<const ExchangeMatrix> exchange;
  collectively(boot, [&] {
    exchange = std::make_shared<const ExchangeMatrix>(exchangeFor(o.alltoallvCounts, comm->worldSize()));
    // A per-pair op's smallest call moves one element per unit of its busiest rank: a sweep that ends below it measures
    // nothing, which is said here, before any work, rather than as an empty table.
    for (const Collective* c : o.ops)
      for (DType t : o.dtypes)
        if (c->perPairCounts() &&
            sweepLayouts(*c, sweepSizes(o, dtypeSize(t)), dtypeSize(t), comm->worldSize(), exchange.get()).empty())
          throw UsageError(
              fmt::format("-e/--max-bytes {}: {} with --alltoallv-counts {} moves at least {} per call in {} (its "
                          "busiest rank's {} units of one element); raise -e",
                          formatBytes(o.maxBytes), c->name(), spelled(o.alltoallvCounts),
                          formatBytes(exchange->busiest() * dtypeSize(t)), dtypeName(t), exchange->busiest()));
  });

  CollectivesRun run(o, boot, *comm, fault, std::move(exchange));
  collectively(boot, [&] { run.allocate(); });
  nlohmann::json myRanks = nlohmann::json::array();
  for (int l = 0; l < comm->localCount(); ++l) myRanks.push_back({{"rank", comm->rank(l)}, {"device", comm->device(l)}});
  ctx.addLayout(ctx.step.empty() ? "collectives" : ctx.step, comm->backend(), comm->worldSize(), comm->localCount(), myRanks);

  run.setWatchdog(std::make_unique<Watchdog>(o.timeoutS, boot.rank(),
                                             endAllRanksOnTimeout(o.timeoutS, boot, [c = comm.get()] { c->abort(); })));
  std::unique_ptr<TraceFiles> traceFiles;
  if (!o.traceDir.empty()) traceFiles = std::make_unique<TraceFiles>(boot, o.traceDir, boot.size());
  const std::size_t wrong = run.run(ctx.writer, ctx.step);  // run (and its buffers) goes before comm
  if (traceFiles) traceFiles->finish("collectives", nlohmann::json::object(), {}, comm->backend());
  return wrong;
}

int runCollectives(const CollectivesOptions& o, const std::vector<std::string>& argv) {
  const BackendKind backend = resolveBackend(o.backend);
  CollectivesOptions asked = o;
  fitOpsToBackend(asked, backend);  // before the run opens: the config names the ops that run
  CollectivesOptions resolved = asked;
  resolved.backend = backend;
  auto session = RunSession::open(resolved.bootstrap, backend == BackendKind::kMpi, "collectives", argv, toJson(resolved),
                                  o.jsonPath, o.timeoutS);
  const std::size_t wrong = runCollectivesStep(resolved, session->context());
  session->finish();
  return wrong ? 1 : 0;
}

}  // namespace ts
