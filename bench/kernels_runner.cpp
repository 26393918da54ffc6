// The driver of `trainscope kernels`: measure the two ceilings, then check, warm up and time every op at
// every shape, and place each on the roofline the ceilings draw. CPU implementations by the host clock;
// CUDA implementations (on GPU 0) by CUDA events.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "base/heartbeat.h"
#include "base/units.h"
#include "bench/activity.h"
#include "bench/agreement.h"
#include "bench/compute_clock.h"
#include "bench/kernels_options.h"
#include "bench/result_writer.h"
#include "bench/run_session.h"
#include "bench/stats.h"
#include "bench/watchdog.h"
#include "comm/bootstrap.h"
#include "kernels/cpu/memory_stream.h"
#include "bench/trace_files.h"
#include "kernels/trace.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_array.h"
#include "kernels/cuda/device_timer.h"
#endif

namespace ts {
namespace {

struct Presets {
  const char* name;
  std::int64_t hidden, seq, batch, vocab;
};
constexpr Presets kPresets[] = {{"tiny", 128, 64, 2, 1024}, {"small", 768, 256, 4, 50257}, {"base", 1024, 1024, 8, 50257}};

std::vector<double> timeRuns(KernelCase& c, int warmup, int iters, int trials) {
  for (int i = 0; i < warmup; ++i) c.run();
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

// The CUDA device current on this thread, as the clock reading needs it (-1 in a build without CUDA).
int currentCudaDevice() {
  int d = -1;
#ifdef TRAINSCOPE_HAVE_CUDA
  CUDA_CHECK(cudaGetDevice(&d));
#endif
  return d;
}

// A kernel_ceiling record, with the clock it was measured at (device: a CUDA ordinal, or -1 for the CPU).
nlohmann::json ceilingRecord(bool compute, double value, const std::string& source, const Stats& s, int device) {
  return {{"kind", "kernel_ceiling"}, {"ceiling", compute ? "compute" : "memory"}, {"value", value}, {"unit", compute ? "TFLOP/s" : "GB/s"},
          {"source", source},         {"time_us", toJson(s)},                      {"clock_mhz", computeClockMhz(device)}};
}

std::string dimsText(const KernelShape& s) {
  std::string out;
  for (const auto& [k, v] : s.dims) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  return out;
}

}  // namespace

double measureCpuGemmCeiling(ResultWriter* writer) {
  double best = 0;
  for (const auto& shape : gemmKernelOp().shapes(64, 1, 1, 2)) {  // only the large squares are used
    if (shape.name.rfind("square", 0) != 0) continue;
    activity::set(fmt::format("compute ceiling: gemm {}", shape.name));
    auto kc = gemmKernelOp().make(shape, KernelSettings{});
    const Stats s = summarize(timeRuns(*kc, 1, 3, 1));
    const double tflops = kc->flops() / (s.min * 1e-6) / 1e12;
    best = std::max(best, tflops);
    if (writer)
      writer->add(ceilingRecord(true, tflops, fmt::format("gemm {} float32 (best of 3)", shape.name), s, -1));
  }
  return best;
}

namespace {

struct Ceilings {
  double tflops = 0, gbps = 0;
};

// The compute ceiling: the best GEMM over the large squares; the memory ceiling: a STREAM copy with every
// hardware thread over arrays well past the last-level cache.
Ceilings measureCeilings(ResultWriter* writer, bool leader) {
  Ceilings c;
  c.tflops = measureCpuGemmCeiling(leader ? writer : nullptr);
  const long threads = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::size_t n = (256ull << 20) / sizeof(double);
  std::vector<double> a(n, 0.0), b(n, 1.0);
  activity::set("memory ceiling: stream copy");
  std::vector<double> us;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::streamCopy(a.data(), b.data(), n, static_cast<int>(threads));
    const auto t1 = std::chrono::steady_clock::now();
    if (i) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    heartbeat::beat();
  }
  const Stats s = summarize(us);
  c.gbps = static_cast<double>(n * cpu::kCopyBytesPerElement) / (s.min * 1e-6) / 1e9;
  if (leader && writer)
    writer->add(ceilingRecord(false, c.gbps, fmt::format("stream copy of 256 MiB, {} threads (best of 5)", threads), s, -1));
  if (leader) std::printf("# ceilings: compute %.3f TFLOP/s (GEMM), memory %.1f GB/s (copy)\n", c.tflops, c.gbps);
  return c;
}

// Device time for a CUDA case (events on its stream: kernels under 20 us as CUDA-graph replays of 20, the
// others one by one with the L2 flushed in between); host time for a CPU case.
std::vector<double> timeCase(KernelCase& c, int warmup, int iters, int trials) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (void* s = c.deviceStream()) {
    const auto stream = static_cast<cudaStream_t>(s);
    for (int i = 0; i < warmup; ++i) c.run();
    CUDA_CHECK(cudaStreamSynchronize(stream));
    cuda::DeviceTimer timer(stream);
    const double once = timer.time(1, [&] { c.run(); }, true).front();
    if (once < 20.0) return timer.timeGraph(iters * trials, 20, [&] { c.run(); });
    return timer.time(iters * trials, [&] { c.run(); }, true);
  }
#endif
  return timeRuns(c, warmup, iters, trials);
}

#ifdef TRAINSCOPE_HAVE_CUDA
// GPU ceilings: the best cuBLASLt GEMM in the run's dtype over large squares, and a device-to-device copy
// of 1 GiB (read + write counted).
// The best cuBLASLt GEMM in `precision` over large squares on the current device.
double cudaGemmCeiling(Precision gemmType, ResultWriter* writer) {
  double best = 0;
  for (std::int64_t n : {4096, 8192}) {
    const KernelShape shape{fmt::format("square {}", n), {{"M", n}, {"N", n}, {"K", n}}};
    activity::set(fmt::format("compute ceiling: gemm {} {}", shape.name, precisionName(gemmType)));
    auto kc = gemmKernelOp().makeCuda(shape, KernelSettings{gemmType});
    const Stats s = summarize(timeCase(*kc, 2, 5, 1));
    const double tflops = kc->flops() / (s.min * 1e-6) / 1e12;
    best = std::max(best, tflops);
    if (writer)
      writer->add(ceilingRecord(true, tflops, fmt::format("cuBLASLt gemm {} {} (best of 5)", shape.name, precisionName(gemmType)), s,
                                currentCudaDevice()));
  }
  return best;
}

Ceilings measureCudaCeilings(const KernelsOptions& o, ResultWriter* writer) {
  Ceilings c;
  c.tflops = cudaGemmCeiling(o.settings.precision, writer);
  constexpr std::size_t kBytes = 1ull << 30;
  cuda::Stream stream;
  cuda::DeviceArray<unsigned char> a(kBytes), b(kBytes);
  CUDA_CHECK(cudaMemsetAsync(a.get(), 1, kBytes, stream.get()));
  cuda::DeviceTimer timer(stream.get());
  activity::set("memory ceiling: device copy of 1 GiB");
  const Stats s = summarize(timer.time(5, [&] { CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), kBytes, cudaMemcpyDeviceToDevice, stream.get())); }, false));
  c.gbps = 2.0 * kBytes / (s.min * 1e-6) / 1e9;
  if (writer)
    writer->add(ceilingRecord(false, c.gbps, "device-to-device copy of 1 GiB, read + write (best of 5)", s, currentCudaDevice()));
  std::printf("# ceilings: compute %.1f TFLOP/s (cuBLASLt %s), memory %.0f GB/s (device copy)\n", c.tflops, std::string(precisionName(o.settings.precision)).c_str(), c.gbps);
  return c;
}
#endif

}  // namespace

std::size_t measureKernels(const KernelsOptions& o, RunContext& ctx);

KernelsOptions resolveKernelsArgs(const KernelsArgs& a) {
  KernelsOptions o = a.opts;
  o.ops.clear();
  if (a.ops == "all") o.ops = allKernelOps();
  else {
    std::stringstream in(a.ops);
    std::string name;
    while (std::getline(in, name, ','))
      if (!name.empty()) o.ops.push_back(&findKernelOp(name));
  }
  if (o.ops.empty()) throw UsageError("--ops: no kernel given");
  try {
    o.settings.precision = parsePrecision(a.dtype);
  } catch (const UsageError& e) {
    throw UsageError(std::string("--dtype: ") + e.what());
  }
  if (a.convAlgo != "heuristic" && a.convAlgo != "search") throw UsageError(fmt::format("--conv-algo: '{}' is not heuristic or search", a.convAlgo));
  if (a.convLayout != "nchw" && a.convLayout != "nhwc") throw UsageError(fmt::format("--conv-layout: '{}' is not nchw or nhwc", a.convLayout));
  o.settings.convSearch = a.convAlgo == "search";
  o.settings.convNhwc = a.convLayout == "nhwc";
  const Presets* p = nullptr;
  for (const auto& x : kPresets)
    if (a.preset == x.name) p = &x;
  if (!p) throw UsageError(fmt::format("--preset: unknown preset '{}' (tiny, small, base)", a.preset));
  o.hidden = a.hidden ? a.hidden : p->hidden;
  o.seq = a.seq ? a.seq : p->seq;
  o.batch = a.batch ? a.batch : p->batch;
  o.vocab = a.vocab ? a.vocab : p->vocab;
  if (o.hidden < 64 || o.hidden % 64) throw UsageError(fmt::format("--hidden {} must be a positive multiple of 64 (heads of 64)", o.hidden));
  if (o.seq < 1 || o.batch < 1 || o.vocab < 2) throw UsageError("--seq and --batch must be at least 1, --vocab at least 2");
  if (o.warmup < 0 || o.iters < 1 || o.trials < 1) throw UsageError("-w/--warmup >= 0, -n/--iters >= 1 and --trials >= 1");
  if (!a.shapesFile.empty()) o.userShapes = loadKernelShapes(a.shapesFile, o.hidden, o.seq, o.batch, o.vocab);
  if (a.backend != "auto" && a.backend != "cpu" && a.backend != "cuda") throw UsageError(fmt::format("--backend: '{}' is not auto, cpu or cuda", a.backend));
  int gpus = 0;
#ifdef TRAINSCOPE_HAVE_CUDA
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) {
    cudaGetLastError();
    gpus = 0;
  }
#endif
  if (a.backend == "cuda" && gpus == 0) throw UsageError("--backend cuda needs a CUDA GPU, and none is usable on this host");
  o.cuda = a.backend == "cuda" || (a.backend == "auto" && gpus > 0);
  for (const KernelOp* op : o.ops)
    if (!op->supports(o.settings.precision, o.cuda))
      throw UsageError(fmt::format("--dtype {}: the {} implementation of {} does not run in it", precisionName(o.settings.precision), o.cuda ? "CUDA" : "CPU", op->name()));
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
  return {{"ops", ops}, {"backend", o.cuda ? "cuda" : "cpu"}, {"shapes", user}, {"dtype", std::string(precisionName(o.settings.precision))},
          {"conv_algo", o.settings.convSearch ? "search" : "heuristic"}, {"conv_layout", o.settings.convNhwc ? "nhwc" : "nchw"}, {"hidden", o.hidden}, {"seq", o.seq}, {"batch", o.batch},
          {"vocab", o.vocab}, {"warmup", o.warmup}, {"iters", o.iters}, {"trials", o.trials}, {"ceilings", o.ceilings},
          {"timeout_s", o.timeoutS}, {"label", o.label}, {"trace", o.traceDir}};
}

std::size_t runKernelsStep(const KernelsOptions& o, RunContext& ctx) {
  const bool leader = ctx.boot.rank() == 0;
  // Process 0 measures; the others stand by without spinning, so the host is its own.
  ctx.boot.barrier();
  std::unique_ptr<TraceFiles> traceFiles;
  if (!o.traceDir.empty()) traceFiles = std::make_unique<TraceFiles>(ctx.boot, o.traceDir, ctx.boot.size());
  const std::size_t failed = leader ? measureKernels(o, ctx) : 0;
  ctx.boot.quietBarrier();
  if (traceFiles) traceFiles->finish("kernels");
  return static_cast<std::size_t>(ctx.boot.sum(static_cast<long long>(failed)));
}

std::size_t measureKernels(const KernelsOptions& o, RunContext& ctx) {
  const bool leader = true;
  ResultWriter* writer = ctx.writer;
  Watchdog watchdog(o.timeoutS, endAllRanksOnTimeout(o.timeoutS, ctx.boot, ctx.streamPath));
  WatchdogScope guard(watchdog);
  cpu_set_t set;
  CPU_ZERO(&set);
  const int usable = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (leader && !o.cuda)
    std::printf("#\n# kernels on the CPU (%s) with %d of %ld hardware threads (this process's affinity; mpirun binds ranks to cores unless --bind-to none)\n",
                std::string(precisionName(o.settings.precision)).c_str(), usable, ::sysconf(_SC_NPROCESSORS_ONLN));
  if (leader && o.userShapes.empty())
    std::printf("# shapes of a transformer block of hidden %lld, sequence %lld, batch %lld, vocabulary %lld\n", static_cast<long long>(o.hidden),
                static_cast<long long>(o.seq), static_cast<long long>(o.batch), static_cast<long long>(o.vocab));
  else if (leader)
    std::printf("# shapes from the --shapes file\n");
#ifdef TRAINSCOPE_HAVE_CUDA
  if (o.cuda) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("#\n# kernels on cuda:0 (%s) in %s: device time from CUDA events\n", prop.name, std::string(precisionName(o.settings.precision)).c_str());
  }
  const Ceilings ceil = !o.ceilings ? Ceilings{} : o.cuda ? measureCudaCeilings(o, writer) : measureCeilings(writer, leader);
#else
  const Ceilings ceil = o.ceilings ? measureCeilings(writer, leader) : Ceilings{};
#endif
  if (leader) std::printf("# %-18s %-18s %-46s %11s %10s %9s %7s %8s %11s %6s\n", "op", "shape", "dims", "time(us)", "GFLOP/s", "GB/s",
                          "bound", "of roof", "max_rel_err", "check");
  std::size_t failed = 0;
  for (const KernelOp* op : o.ops) {
    std::vector<KernelShape> shapes;
    for (const auto& [userOp, userShape] : o.userShapes)
      if (userOp == op) shapes.push_back(userShape);
    if (shapes.empty() && o.userShapes.empty()) shapes = op->shapes(o.hidden, o.seq, o.batch, o.vocab);
    for (const KernelShape& shape : shapes) {
      activity::set(fmt::format("kernel {} {} ({})", op->name(), shape.name, dimsText(shape)));
      trace::Span span(fmt::format("kernel {} {}", op->name(), shape.name), "compute");  // and its NVTX range
      if (trace::enabled()) span.annotate({{"op", std::string(op->name())}, {"shape", shape.name}});
      std::unique_ptr<KernelCase> kc;
      try {
        kc = o.cuda ? op->makeCuda(shape, o.settings) : op->make(shape, o.settings);
      } catch (const std::bad_alloc&) {
        throw Error(fmt::format("{} {}: out of host memory for its buffers ({})", op->name(), shape.name, dimsText(shape)));
      }
      if (!kc) {
        std::printf("  %-18s %-18s (no CUDA implementation yet: skipped)\n", std::string(op->name()).c_str(), shape.name.c_str());
        continue;
      }
      trace::Span checking("check", "compute");
      const KernelCheck chk = kc->check();
      checking.close();
      failed += !chk.passed;
      trace::Span timing("timed", "compute");
      const std::vector<double> samples = timeCase(*kc, o.warmup, o.iters, o.trials);
      timing.close();
      const nlohmann::json clock = computeClockMhz(o.cuda ? currentCudaDevice() : -1);  // the clock its roofline fraction is at
      const Stats s = summarize(samples);
      const double tflops = kc->flops() / (s.median * 1e-6) / 1e12;
      const double gbps = kc->bytes() / (s.median * 1e-6) / 1e9;
      const double intensity = kc->flops() / kc->bytes();
      nlohmann::json dims = nlohmann::json::object();
      for (const auto& [k, v] : shape.dims) dims[k] = v;
      nlohmann::json roof = nullptr;
      std::string bound = "-", fraction = "-";
      if (ceil.tflops > 0 && ceil.gbps > 0) {
        const double memoryRoof = intensity * ceil.gbps / 1e3;  // TFLOP/s the memory ceiling allows
        const bool computeBound = memoryRoof >= ceil.tflops;
        const double attainable = std::min(ceil.tflops, memoryRoof);
        roof = {{"bound", computeBound ? "compute" : "memory"}, {"ceiling_tflops", ceil.tflops}, {"ceiling_gbps", ceil.gbps},
                {"attainable_tflops", attainable}, {"fraction_of_ceiling", tflops / attainable}};
        bound = computeBound ? "compute" : "memory";
        fraction = fmt::format("{:.0f}%", 100 * tflops / attainable);
      }
      nlohmann::json rec = {{"kind", "kernel"},          {"op", std::string(op->name())},
                            {"shape_name", shape.name},  {"shape", dims},
                            {"dtype", std::string(precisionName(o.settings.precision))}, {"backend", o.cuda ? "cuda" : "cpu"},
                            {"flops", kc->flops()},      {"bytes", kc->bytes()},
                            {"time_us", toJson(s)},      {"samples_us", samples},
                            {"tflops", tflops},          {"gbps", gbps},
                            {"arithmetic_intensity", intensity}, {"roofline", roof}, {"clock_mhz", clock},
                            {"check", {{"performed", true}, {"passed", chk.passed}, {"max_rel_err", chk.maxRelErr}, {"tolerance", chk.tolerance}}}};
      if (const nlohmann::json extra = kc->details(); !extra.empty()) rec["details"] = extra;
      if (!o.label.empty()) rec["label"] = o.label;
      if (!ctx.step.empty()) rec["step"] = ctx.step;
      if (leader && writer) writer->add(rec);
      if (leader) {
        std::printf("  %-18s %-18s %-46s %11.2f %10.2f %9.2f %7s %8s %11.2e %6s\n", std::string(op->name()).c_str(), shape.name.c_str(),
                    dimsText(shape).c_str(), s.median, tflops * 1e3, gbps, bound.c_str(), fraction.c_str(), chk.maxRelErr, chk.passed ? "ok" : "FAILED");
        std::fflush(stdout);
      }
    }
  }
  activity::set("");
  if (failed && leader) std::fprintf(stderr, "trainscope: error: %zu kernel(s) failed their check against the float64 reference\n", failed);
  return failed;
}

int runKernels(const KernelsOptions& o, const std::vector<std::string>& argv) {
  auto session = RunSession::open(BootstrapKind::kAuto, launchedByMpi(), "kernels", argv, toJson(o), o.jsonPath);
  const std::size_t failed = runKernelsStep(o, session->context());
  session->finish();
  return failed ? 1 : 0;
}

double measureCudaGemmCeiling(ResultWriter* writer, int ordinal) {
#ifdef TRAINSCOPE_HAVE_CUDA
  CUDA_CHECK(cudaSetDevice(ordinal));
  return cudaGemmCeiling(Precision::kFloat32, writer);
#else
  (void)writer;
  (void)ordinal;
  return 0;
#endif
}

}  // namespace ts
