// The driver of `trainscope kernels`: measure the ceilings (bench/kernels/ceilings.h), then check, warm up and time
// every op at every shape, and place each on the roofline the ceilings draw, against the memory ceiling of
// the level its bytes stream at. A case above its ceiling has that ceiling re-measured once and, still
// above it, is marked ceiling_suspect. CPU implementations by the host clock; CUDA implementations (on
// GPU 0) by CUDA events.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "base/error.h"
#include "base/heartbeat.h"
#include "base/host_name.h"
#include "base/json_text.h"
#include "base/terminal_text.h"
#include "base/units.h"
#include "base/user_paths.h"
#include "bench/failures/activity.h"
#include "bench/failures/agreement.h"
#include "bench/failures/fault_injection.h"
#include "bench/failures/watchdog.h"
#include "bench/kernels/ceilings.h"
#include "bench/kernels/cpu_contention.h"
#include "bench/kernels/host_caches.h"
#include "bench/kernels/kernel_record.h"
#include "bench/kernels/kernels_options.h"
#include "bench/kernels/kernels_table.h"
#include "bench/results/result_writer.h"
#include "bench/results/stats.h"
#include "bench/run/run_session.h"
#include "bench/run/trace_files.h"
#include "bench/telemetry/compute_clock.h"
#include "comm/bootstrap.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/device_count.h"
#include "kernels/trace.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_timer.h"
#endif

namespace ts {
namespace {

struct Presets {
  const char* name;
  std::int64_t hidden, seq, batch, vocab;
};
constexpr Presets kPresets[] = {{"tiny", 128, 64, 2, 1024}, {"small", 768, 256, 4, 50257}, {"base", 1024, 1024, 8, 50257}};

// The timed runs per trial: --iters, or more where `onceUs` (one run) is short enough that --iters runs would
// take less than --min-time-ms in all; at most 1000 for the time (each is a sample in the record), --iters if more.
int itersFor(int iters, int trials, double minTimeMs, double onceUs) {
  constexpr double kMostForTime = 1000;
  if (minTimeMs <= 0 || onceUs <= 0) return iters;
  const double wanted = std::ceil(minTimeMs * 1e3 / (onceUs * trials));
  return std::max(iters, static_cast<int>(std::min(wanted, kMostForTime)));
}

std::vector<double> timeRuns(KernelCase& c, int warmup, int iters, int trials, double minTimeMs) {
  double onceUs = 0;  // the last warm-up run, for itersFor
  // --min-time-ms needs one run's time: with no warm-up (-w 0), one run outside the samples gives it.
  const int untimed = minTimeMs > 0 ? std::max(warmup, 1) : warmup;
  for (int i = 0; i < untimed; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    c.run();
    onceUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  iters = itersFor(iters, trials, minTimeMs, onceUs);
  std::vector<double> us;
  for (int t = 0; t < trials; ++t)
    for (int i = 0; i < iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      c.run();
      const auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      heartbeat::beat();
    }
  return us;
}

// A case's timed runs, and whether its data stays warm in the caches between them (the level its bytes
// fit then sets its memory ceiling; otherwise DRAM does).
struct TimedCase {
  std::vector<double> us;
  bool cachesWarm = true;
};

// Device time for a CUDA case (events on its stream: kernels under 20 us as CUDA-graph replays of 20, which
// leave the L2 warm, the others one by one with the L2 flushed in between); host time for a CPU case, whose
// buffers stay in whatever cache holds them.
TimedCase timeCase(KernelCase& c, int warmup, int iters, int trials, double minTimeMs) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (void* s = c.deviceStream()) {
    const auto stream = static_cast<cudaStream_t>(s);
    for (int i = 0; i < warmup; ++i) c.run();
    CUDA_CHECK(cudaStreamSynchronize(stream));
    cuda::DeviceTimer timer(stream);
    const double once = timer
                            .time(
                                1, [&] { c.run(); }, true)
                            .front();
    const int runs = itersFor(iters, trials, minTimeMs, once) * trials;
    if (once < 20.0) return {timer.timeGraph(runs, 20, [&] { c.run(); }), true};
    return {timer.time(
                runs, [&] { c.run(); }, true),
            false};
  }
#endif
  return {timeRuns(c, warmup, iters, trials, minTimeMs), true};
}

// The case's clock: the CUDA device current on this thread, or the CPU's (-1) for a CPU case.
std::optional<double> caseClockMhz(bool cuda) {
  int d = -1;
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cuda) CUDA_CHECK(cudaGetDevice(&d));
#else
  (void)cuda;
#endif
  return readComputeClockMhz(d);
}

// The ceilings of the run: the GPU's on GPU 0, or the CPU's with the threads this process may use.
CeilingSet measureCeilings(const KernelsOptions& o, RunContext& ctx, const CeilingSink& emit, bool speaks, double plantedScale,
                           int threads) {
  CeilingOptions co{emit, ctx.step, plantedScale, !o.cuda};
  std::vector<CeilingSpec> specs = o.cuda ? cudaGemmCeilingSpecs(o.settings.precision, 0) : cpuGemmCeilingSpecs();
  std::vector<CeilingSpec> memory =
      o.cuda ? cudaMemoryCeilingSpecs(0) : cpuMemoryCeilingSpecs(threads, hostDataCaches(cpusInUse()));
  for (auto& m : memory) specs.push_back(std::move(m));
  CeilingSet c(std::move(specs), co);
  if (speaks) std::printf("%s\n", c.consoleLine().c_str());
  return c;
}

// A case on the roofline: against the compute ceiling and the memory ceiling of the level its bytes
// stream at. Above its ceiling it has that ceiling re-measured (once a run) and is placed again; still
// above, it is suspect.
struct CasePlace {
  KernelRoofline roof;
  std::optional<SuspectFigure> suspect;
};

CasePlace placeCase(CeilingSet& ceilings, const std::string& name, double tflops, double intensity, double bytes,
                    bool cachesWarm) {
  auto place = [&] {
    const MemoryCeiling memory = memoryCeilingFor(ceilings.memoryLevels(), bytes, cachesWarm);
    return std::pair{memory, placeOnRoofline(tflops, intensity, ceilings.computeTflops(), memory.gbps)};
  };
  auto [memory, p] = place();
  std::optional<CeilingKind> rechecked;
  if (aboveCeiling(p.fraction) && ceilings.recheck(p.bound, memory.level, name)) {
    rechecked = p.bound;
    std::tie(memory, p) = place();
  }
  CasePlace out{{p.bound, ceilings.computeTflops(), memory.gbps, memory.level, p.attainableTflops, p.fraction, rechecked},
                std::nullopt};
  if (aboveCeiling(p.fraction)) out.suspect = SuspectFigure{name, p.fraction, ceilings.likelyCause(p.bound, memory.level)};
  return out;
}

// The shapes an op is measured at: the --shapes file's for it, or, without a file, the preset block's.
std::vector<KernelShape> shapesOf(const KernelOp& op, const KernelsOptions& o) {
  std::vector<KernelShape> shapes;
  for (const auto& [userOp, userShape] : o.userShapes)
    if (userOp == &op) shapes.push_back(userShape);
  if (shapes.empty() && o.userShapes.empty()) shapes = op.shapes(o.hidden, o.seq, o.batch, o.vocab);
  return shapes;
}

// One op at one shape: checked, timed and placed on the roofline; nullopt where the op has no
// implementation for the backend. `suspect` receives the figure when it stays above its ceiling.
std::optional<KernelRecord> measureCase(const KernelOp& op, const KernelShape& shape, const KernelsOptions& o,
                                        std::optional<CeilingSet>& ceilings, std::vector<SuspectFigure>& suspects) {
  activity::set(fmt::format("kernel {} {} ({})", op.name(), shape.name, dimsText(shape)));
  trace::Span span(fmt::format("kernel {} {}", op.name(), shape.name), trace::Role::kCompute);  // and its NVTX range
  if (trace::enabled()) span.annotate({{"op", std::string(op.name())}, {"shape", shape.name}});
  std::unique_ptr<KernelCase> kc;
  try {
    kc = o.cuda ? op.makeCuda(shape, o.settings) : op.make(shape, o.settings);
  } catch (const std::bad_alloc&) {
    throw Error(fmt::format("{} {}: out of host memory for its buffers ({})", op.name(), shape.name, dimsText(shape)));
  }
  if (!kc) return std::nullopt;
  KernelRecord r;
  trace::Span checking("check", trace::Role::kCompute);
  r.check = kc->check();
  checking.close();
  trace::Span timing("timed", trace::Role::kCompute);
  const OthersCpuMeter others;  // the host's CPUs taken by other processes while this case was timed
  TimedCase timed = timeCase(*kc, o.warmup, o.iters, o.trials, o.minTimeMs);
  if (!o.cuda) r.othersCpuFraction = others.fraction();
  timing.close();
  r.clockMhz = caseClockMhz(o.cuda);  // the clock its roofline fraction is at
  // Its typical rate (the median) against the best the ceilings showed: a fraction that never flatters.
  r.time = summarize(timed.us);
  r.samplesUs = std::move(timed.us);
  r.op = std::string(op.name());
  r.shape = shape;
  r.dtype = o.settings.precision;
  r.cuda = o.cuda;
  r.flops = kc->flops();
  r.bytes = kc->bytes();
  r.tflops = r.flops / (r.time.median * 1e-6) / 1e12;
  r.gbps = r.bytes / (r.time.median * 1e-6) / 1e9;
  r.intensity = r.flops / r.bytes;
  if (ceilings) {
    CasePlace place =
        placeCase(*ceilings, fmt::format("{} {}", op.name(), shape.name), r.tflops, r.intensity, r.bytes, timed.cachesWarm);
    r.roofline = place.roof;
    if (place.suspect) {
      r.suspect = place.suspect->cause;
      suspects.push_back(*place.suspect);
    }
  }
  r.details = kc->details();
  r.label = o.label;
  return r;
}

// --conv-algo and --conv-layout against the backend: cuDNN's search on CUDA only, the CPU's algorithms on the
// CPU only, and a CPU method this build can run (oneDNN built in; im2col in NCHW).
void checkConvChoice(const KernelsOptions& o, const KernelsArgs& a) {
  const bool cpuAlgo = a.convAlgo == ConvAlgo::kOneDnn || a.convAlgo == ConvAlgo::kIm2col;
  if (o.cuda && cpuAlgo)
    throw UsageError(fmt::format("--conv-algo {} is a CPU algorithm: on CUDA, heuristic or search", nameOf(a.convAlgo)));
  if (o.cuda) return;
  if (a.convAlgo == ConvAlgo::kSearch)
    throw UsageError("--conv-algo search times cuDNN's algorithms (CUDA): on the CPU, heuristic, onednn or im2col");
  try {
    cpu::requireConvMethod({o.settings.cpuConv, a.convLayout});
  } catch (const Error& e) {
    throw UsageError(fmt::format("--conv-algo {} --conv-layout {}: {}", nameOf(a.convAlgo), nameOf(a.convLayout), e.what()));
  }
}

// The CPU convolution the conv cases run, for the console: "onednn (oneDNN 2.6.3, OpenMP threads), nchw".
std::string cpuConvLine(const KernelSettings& k) {
  const bool onednn = k.cpuConv == cpu::ConvAlgorithm::kOneDnn;
  return fmt::format("{}{}, {}", nameOf(k.cpuConv), onednn ? " (" + cpu::oneDnnDescription() + ")" : " + GEMM",
                     nameOf(k.convNhwc ? ConvLayout::kNhwc : ConvLayout::kNchw));
}

}  // namespace

std::size_t measureKernels(const KernelsOptions& o, RunContext& ctx, const CeilingSink& emit, bool speaks);

KernelsOptions resolveKernelsArgs(const KernelsArgs& a) {
  KernelsOptions o = a.opts;
  o.ops.clear();
  if (a.ops == "all")
    o.ops = allKernelOps();
  else {
    std::stringstream in(a.ops);
    std::string name;
    while (std::getline(in, name, ','))
      if (!name.empty()) o.ops.push_back(&findKernelOp(name));
  }
  if (o.ops.empty()) throw UsageError("--ops: no kernel given");
  o.settings.precision = a.dtype;
  o.convAlgo = a.convAlgo;
  o.settings.convSearch = a.convAlgo == ConvAlgo::kSearch;
  o.settings.convNhwc = a.convLayout == ConvLayout::kNhwc;
  if (a.convAlgo == ConvAlgo::kOneDnn) o.settings.cpuConv = cpu::ConvAlgorithm::kOneDnn;
  if (a.convAlgo == ConvAlgo::kIm2col) o.settings.cpuConv = cpu::ConvAlgorithm::kIm2col;
  const Presets* p = nullptr;
  for (const auto& x : kPresets)
    if (a.preset == x.name) p = &x;
  if (!p) throw UsageError(fmt::format("--preset: unknown preset '{}' (tiny, small, base)", a.preset));
  o.hidden = a.hidden ? a.hidden : p->hidden;
  o.seq = a.seq ? a.seq : p->seq;
  o.batch = a.batch ? a.batch : p->batch;
  o.vocab = a.vocab ? a.vocab : p->vocab;
  if (o.hidden < 64 || o.hidden % 64)
    throw UsageError(fmt::format("--hidden {} must be a positive multiple of 64 (heads of 64)", o.hidden));
  if (o.seq < 1 || o.batch < 1 || o.vocab < 2) throw UsageError("--seq and --batch must be at least 1, --vocab at least 2");
  if (o.warmup < 0 || o.iters < 1 || o.trials < 1) throw UsageError("-w/--warmup >= 0, -n/--iters >= 1 and --trials >= 1");
  if (!a.shapesFile.empty()) o.userShapes = loadKernelShapes(a.shapesFile, o.hidden, o.seq, o.batch, o.vocab);
  if (!o.traceDir.empty()) checkOutputDirectory("--trace", o.traceDir);
  const int gpus = cuda::usableDeviceCount();
  if (a.backend == KernelBackend::kCuda && gpus == 0)
    throw UsageError("--backend cuda needs a CUDA GPU, and none is usable on this host");
  o.cuda = a.backend == KernelBackend::kCuda || (a.backend == KernelBackend::kAuto && gpus > 0);
  checkConvChoice(o, a);
  for (const KernelOp* op : o.ops)
    if (!op->supports(o.settings.precision, o.cuda))
      throw UsageError(fmt::format("--dtype {}: the {} implementation of {} does not run in it",
                                   precisionName(o.settings.precision), o.cuda ? "CUDA" : "CPU", op->name()));
  return o;
}

nlohmann::json toJson(const KernelsOptions& o) {
  nlohmann::json ops = nlohmann::json::array();
  for (const KernelOp* op : o.ops) ops.push_back(std::string(op->name()));
  nlohmann::json user = nlohmann::json::array();
  for (const auto& [op, shape] : o.userShapes) {
    nlohmann::json dims = nlohmann::json::object();
    for (const auto& [k, v] : shape.dims) dims[k] = v;
    user.push_back({{"op", std::string(op->name())}, {"name", shape.name}, {"shape", dims}});
  }
  nlohmann::json j = o.given;
  j["resolved"] = {{"ops", ops},
                   {"backend", o.cuda ? "cuda" : "cpu"},
                   {"shapes", user},
                   {"dtype", std::string(precisionName(o.settings.precision))},
                   {"conv_algo", nameOf(o.convAlgo)},
                   {"conv_layout", nameOf(o.settings.convNhwc ? ConvLayout::kNhwc : ConvLayout::kNchw)},
                   {"hidden", o.hidden},
                   {"seq", o.seq},
                   {"batch", o.batch},
                   {"vocab", o.vocab}};
  return j;
}

namespace {

// "# also measured on node-b: compute ceiling 0.11 TFLOP/s, 19 kernels": what the other hosts' processes
// measured (process 0 prints its own table; theirs would interleave with it).
void printOtherHosts(const nlohmann::json& records, const std::string& mine) {
  std::map<std::string, std::pair<double, int>> hosts;  // host -> (best compute ceiling, kernel records)
  for (const auto& rec : records) {
    const std::string host = rec.value("host", "");
    if (host == mine) continue;
    auto& [ceiling, kernels] = hosts[host];
    if (rec["kind"] == "kernel") ++kernels;
    if (rec["kind"] == "kernel_ceiling" && rec["ceiling"] == "compute") ceiling = std::max(ceiling, rec["value"].get<double>());
  }
  for (const auto& [host, figures] : hosts)
    std::printf("%s", printableLines(fmt::format("# also measured on {}: compute ceiling {:.4g} TFLOP/s, {} kernel(s)\n", host,
                                                 figures.first, figures.second))
                          .c_str());
}

}  // namespace

std::size_t runKernelsStep(const KernelsOptions& o, RunContext& ctx) {
  Bootstrap& boot = ctx.boot;
  // The first process of each host measures that host, so that every host of a run across nodes has its own
  // ceilings and kernels to be judged on (accept); the others stand by without spinning, so the host is its own.
  const std::string host = hostName();
  const std::vector<std::string> hosts = boot.allGatherStrings(host);
  const bool measures = std::find(hosts.begin(), hosts.end(), host) - hosts.begin() == boot.rank();
  std::unique_ptr<TraceFiles> traceFiles;
  if (!o.traceDir.empty()) traceFiles = std::make_unique<TraceFiles>(boot, o.traceDir, boot.size());
  // Each record names its host. Process 0 writes its own as they are measured (a crash keeps them); the
  // other hosts' travel to it at the end of the step.
  nlohmann::json others = nlohmann::json::array();
  const CeilingSink emit = [&](const nlohmann::json& rec) {
    nlohmann::json tagged = rec;
    tagged["host"] = host;
    if (ctx.writer)
      ctx.writer->add(tagged);
    else
      others.push_back(std::move(tagged));
  };
  const std::size_t failed = measures ? measureKernels(o, ctx, emit, boot.rank() == 0) : 0;
  boot.quietBarrier();
  const std::vector<std::string> gathered = boot.allGatherStrings(jsonText(others));
  if (boot.rank() == 0) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& text : gathered)
      for (const auto& rec : nlohmann::json::parse(text)) all.push_back(rec);
    if (ctx.writer)
      for (const auto& rec : all) ctx.writer->add(rec);
    printOtherHosts(all, host);
  }
  if (traceFiles) traceFiles->finish("kernels");
  return static_cast<std::size_t>(boot.sum(static_cast<long long>(failed)));
}

std::size_t measureKernels(const KernelsOptions& o, RunContext& ctx, const CeilingSink& emit, bool speaks) {
  Watchdog watchdog(o.timeoutS, ctx.boot.rank(), endAllRanksOnTimeout(o.timeoutS, ctx.boot));
  WatchdogScope guard(watchdog);
  const double plantedScale = plantedCeilingScale(faultFromEnvironment(), ctx.boot.rank());
  const int usable = static_cast<int>(cpusInUse().size());
  if (speaks && !o.cuda)
    std::printf(
        "#\n# kernels on the CPU (%s) with %d of %ld hardware threads (this process's affinity; mpirun binds ranks to cores "
        "unless --bind-to none)\n",
        std::string(precisionName(o.settings.precision)).c_str(), usable, ::sysconf(_SC_NPROCESSORS_ONLN));
  if (speaks && !o.cuda) {
    std::printf("# convolution: %s\n", cpuConvLine(o.settings).c_str());
    // A dense bias + GELU GEMM names what fuses its epilogue (each record's details.implementation: its own).
    std::printf("# gemm: OpenBLAS; epilogues: %s\n",
                cpu::gemmEpilogueImplementation(false, false, 64, 64, 64, true, true).c_str());
  }
  if (speaks && o.userShapes.empty())
    std::printf("# shapes of a transformer block of hidden %lld, sequence %lld, batch %lld, vocabulary %lld\n",
                static_cast<long long>(o.hidden), static_cast<long long>(o.seq), static_cast<long long>(o.batch),
                static_cast<long long>(o.vocab));
  else if (speaks)
    std::printf("# shapes from the --shapes file\n");
#ifdef TRAINSCOPE_HAVE_CUDA
  if (speaks && o.cuda) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("#\n# kernels on cuda:0 (%s) in %s: device time from CUDA events\n", prop.name,
                std::string(precisionName(o.settings.precision)).c_str());
  }
#endif
  std::optional<CeilingSet> ceilings;
  if (o.ceilings) ceilings.emplace(measureCeilings(o, ctx, emit, speaks, plantedScale, usable));
  if (speaks) std::printf("%s", kernelsTableHeader().c_str());
  std::size_t failed = 0;
  std::vector<SuspectFigure> suspects;
  for (const KernelOp* op : o.ops)
    for (const KernelShape& shape : shapesOf(*op, o)) {
      std::optional<KernelRecord> rec = measureCase(*op, shape, o, ceilings, suspects);
      if (!rec) {
        if (speaks) std::printf("%s", kernelsSkippedRow(op->name(), shape.name).c_str());
        continue;
      }
      failed += !rec->check.passed;
      rec->step = ctx.step;
      emit(toJson(*rec));
      if (speaks) std::printf("%s", kernelsTableRow(*rec).c_str());
      std::fflush(stdout);
    }
  activity::set("");
  if (speaks && !suspects.empty()) std::printf("%s\n", suspectWarning(suspects).c_str());
  if (failed) std::fprintf(stderr, "trainscope: error: %zu kernel(s) failed their check against the float64 reference\n", failed);
  return failed;
}

int runKernels(const KernelsOptions& o, const std::vector<std::string>& argv) {
  auto session = RunSession::open(BootstrapKind::kAuto, launchedByMpi(), "kernels", argv, toJson(o), o.jsonPath, o.timeoutS);
  const std::size_t failed = runKernelsStep(o, session->context());
  session->finish();
  return failed ? 1 : 0;
}

}  // namespace ts
