// `trainscope kernels`: the option table of the kernel benchmarks, their command line and their suite step.
#include <memory>

#include "bench/choice_errors.h"
#include "bench/commands.h"
#include "bench/kernels/kernels_options.h"
#include "bench/run_flags.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

const OptionTable<KernelsArgs>& kernelsOptions() {
  static const OptionTable<KernelsArgs> table = [] {
    OptionTable<KernelsArgs> t;
    const auto opts = TS_FIELD(opts);
    t.group("What is measured");
    t.add("--ops", "all, or a comma list of " + kernelOpNameList(), TS_FIELD(ops), TextForm::kList);
    // --device and --precision: train's words for the same choices (the suite keys stay backend and dtype).
    onUnknownChoice(t.add("--backend,--device", "cpu, cuda (GPU 0), or auto: cuda when a GPU is present", TS_FIELD(backend)),
                    notOneOf<KernelBackend>());
    onUnknownChoice(
        t.add("-d,--dtype,--precision",
              "Precision: float32, tf32, bfloat16, float16 (or bf16, fp16; the CPU runs float32; on CUDA each op says which it "
              "takes)",
              TS_FIELD(dtype)),
        unknownChoice<Precision>("precision"));
    onUnknownChoice(
        t.add("--conv-algo",
              "Convolution algorithm: heuristic (the library's first choice: cuDNN's, or on the CPU oneDNN's where built "
              "with it), search (cuDNN times each), onednn or im2col (the CPU's)",
              TS_FIELD(convAlgo)),
        notOneOf<ConvAlgo>());
    onUnknownChoice(
        t.add("--conv-layout", "Convolution tensor layout: nchw or nhwc (on the CPU: oneDNN's)", TS_FIELD(convLayout)),
        notOneOf<ConvLayout>());
    t.add("--preset", "The transformer block whose shapes are measured: tiny, small (GPT-2 small), base", TS_FIELD(preset));
    t.add("--shapes", "A TOML file of [[shape]] tables (op, name, dimensions): measure these shapes instead of the preset's",
          TS_FIELD(shapesFile));
    t.add("--hidden", "Override the preset's hidden size (a multiple of 64; 0 = the preset's)", TS_FIELD(hidden));
    t.add("--seq", "Override the preset's sequence length (0 = the preset's)", TS_FIELD(seq));
    t.add("--batch", "Override the preset's batch size (0 = the preset's)", TS_FIELD(batch));
    t.add("--vocab", "Override the preset's vocabulary size (0 = the preset's)", TS_FIELD(vocab));
    t.group("How it is timed");
    addWarmupFlag(t, opts, "Untimed runs first");
    addItersFlag(t, opts, "Timed runs per trial");
    addTrialsFlag(t, opts);
    t.add("--min-time-ms",
          "Time each case for at least this many milliseconds in all: more than --iters runs where one is short (0 = --iters "
          "only)",
          TS_FIELD(opts.minTimeMs))
        .range({0, 1e6});
    // --ceiling: train's name for the same step (the suite key stays ceilings).
    t.add("--ceilings,!--no-ceilings", "Measure the compute and memory ceilings first (the roofline)", TS_FIELD(opts.ceilings))
        .renamed("--ceiling,!--no-ceiling");
    t.group("The run and its output");
    addTimeoutFlag(t, opts);
    addOutputFlags(t, opts);
    addTraceFlag(t, opts, "Write the spans of each kernel case (its check and timed runs) as Chrome trace JSON into DIR");
    return t;
  }();
  return table;
}

SuiteStep readKernelsStep(StepReader& r) { return tableStep(r, kernelsOptions(), resolveKernelsArgs, runKernelsStep); }

}  // namespace

Subcommand kernelsSubcommand() {
  return {"kernels", "Measure the compute ops on the roofline: " + kernelOpNameList(),
          [](CLI::App& sub) {
            return addTable<KernelsArgs>(sub, kernelsOptions(), std::make_shared<KernelsArgs>(),
                                         [](const KernelsArgs& a, const std::vector<std::string>& argv) {
                                           return runKernels(resolveRecorded(kernelsOptions(), a, resolveKernelsArgs), argv);
                                         });
          },
          readKernelsStep, kernelsOptions().describe()};
}

}  // namespace ts
