"""`analyze`: a `--trace` run's spans (or PyTorch profiler traces) read per rank (trace_dir, pytorch_trace), where each
step went (analyze, intervals), the pipeline's critical path and the kernel breakdown."""

BUILT_ON: tuple[str, ...] = ()
