// `trainscope kernels`: the command line of the kernel benchmarks.
#include <memory>

#include "bench/commands.h"
#include "bench/kernels_options.h"

namespace ts {

Action addKernelsCommand(CLI::App& app) {
  auto a = std::make_shared<KernelsArgs>();
  auto& o = a->opts;
  CLI::App* sub = app.add_subcommand("kernels", "Measure the compute ops (GEMM, convolution, attention, layernorm, softmax, GELU, cross-entropy, AdamW) on the roofline");
  sub->add_option("--ops", a->ops, "all, or a comma list of gemm, conv2d, conv2d_bwd_data, conv2d_bwd_filter, attention, layernorm, softmax, gelu, cross_entropy, adamw")->capture_default_str();
  sub->add_option("--backend", a->backend, "cpu, cuda (GPU 0), or auto: cuda when a GPU is present")->capture_default_str();
  sub->add_option("-d,--dtype", a->dtype, "Precision: float32, tf32, bfloat16, float16 (the CPU runs float32; on CUDA each op says which it takes)")->capture_default_str();
  sub->add_option("--conv-algo", a->convAlgo, "cuDNN convolution algorithm: heuristic (cuDNN's first choice) or search (cuDNN times each)")->capture_default_str();
  sub->add_option("--conv-layout", a->convLayout, "Convolution tensor layout on CUDA: nchw or nhwc")->capture_default_str();
  sub->add_option("--preset", a->preset, "The transformer block whose shapes are measured: tiny, small (GPT-2 small), base")->capture_default_str();
  sub->add_option("--shapes", a->shapesFile, "A TOML file of [[shape]] tables (op, name, dimensions): measure these shapes instead of the preset's");
  sub->add_option("--hidden", a->hidden, "Override the preset's hidden size (a multiple of 64)");
  sub->add_option("--seq", a->seq, "Override the preset's sequence length");
  sub->add_option("--batch", a->batch, "Override the preset's batch size");
  sub->add_option("--vocab", a->vocab, "Override the preset's vocabulary size");
  sub->add_option("-w,--warmup", o.warmup, "Untimed runs first")->capture_default_str();
  sub->add_option("-n,--iters", o.iters, "Timed runs per trial")->capture_default_str();
  sub->add_option("--trials", o.trials, "Trials")->capture_default_str();
  sub->add_flag("--ceilings,!--no-ceilings", o.ceilings, "Measure the compute and memory ceilings first (the roofline)");
  sub->add_option("--timeout", o.timeoutS, "Seconds without progress before the run is stopped (0 = never)")->capture_default_str();
  sub->add_option("--json", o.jsonPath, "Write the result document here; records stream to the .jsonl beside it");
  sub->add_option("--label", o.label, "A label for this run");
  sub->add_option("--trace", o.traceDir, "Write the spans of each kernel case (its check and timed runs) as Chrome trace JSON into DIR");
  return [a](const std::vector<std::string>& argv) { return runKernels(resolveKernelsArgs(*a), argv); };
}

}  // namespace ts
