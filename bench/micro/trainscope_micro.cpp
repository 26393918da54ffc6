// trainscope_micro: the ops of `trainscope kernels` as Google Benchmark cases, for users who already feed
// Google Benchmark's JSON (--benchmark_format=json, --benchmark_filter) to their own tools. Cases are
// registered from the same op files (kernels/specs/) at the tiny and small transformer shapes; each
// reports FLOP/s and bytes/s counters from the op's own FLOP and byte counts, and fails (SkipWithError)
// when the op does not pass its float64 check.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "kernels/specs/kernel_op.h"

namespace {

struct Preset {
  const char* name;
  std::int64_t hidden, seq, batch, vocab;
};
constexpr Preset kPresets[] = {{"tiny", 128, 64, 2, 1024}, {"small", 768, 256, 4, 50257}};

void registerAll() {
  for (const Preset& p : kPresets) {
    for (const ts::KernelOp* op : ts::allKernelOps()) {
      for (const ts::KernelShape& shape : op->shapes(p.hidden, p.seq, p.batch, p.vocab)) {
        const std::string name = std::string(op->name()) + "/" + p.name + "/" + shape.name;
        benchmark::RegisterBenchmark(name.c_str(), [op, shape](benchmark::State& state) {
          auto c = op->make(shape, ts::KernelSettings{});
          const ts::KernelCheck check = c->check();
          if (!check.passed) {
            state.SkipWithError(("failed its float64 check: max relative error " + std::to_string(check.maxRelErr)).c_str());
            return;
          }
          for (auto _ : state) c->run();
          state.counters["FLOP/s"] = benchmark::Counter(c->flops(), benchmark::Counter::kIsIterationInvariantRate);
          state.counters["bytes/s"] = benchmark::Counter(c->bytes(), benchmark::Counter::kIsIterationInvariantRate);
        })->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
