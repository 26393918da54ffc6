#!/usr/bin/env bash
# Coverage-guided fuzzing of the readers of untrusted bytes (fuzz/: the safetensors header, MNIST IDX,
# CIFAR-10 batches, the suite TOML, the bootstrap's hello, the links pairs file). Builds the libFuzzer
# targets with Debian's clang in a build directory of their own (build-fuzz: the main build is untouched),
# then runs each for a bounded time, starting from its committed seed corpus (fuzz/corpus/<target>/, which
# also holds the regression inputs of crashes found before). Fails on any crash, sanitizer report, hang or
# memory blow-up, and leaves the input that caused it in build-fuzz/findings/<target>/.
#   scripts/fuzz.sh [SECONDS]   each target's time, default 20 (6 targets, one per core: about 1 minute on 2 cores)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
seconds="${1:-20}"
case "$seconds" in '' | *[!0-9]* | 0) echo "usage: scripts/fuzz.sh [SECONDS], a whole number above 0" >&2; exit 2 ;; esac

# clang-14 with libFuzzer and the sanitizers' runtimes (a Recommends of clang, which ts_apt_install skips).
ts_apt_install clang libclang-rt-14-dev
build="${TS_FUZZ_BUILD:-$TS_ROOT/build-fuzz}"
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# A unity build (a target's sources compiled 32 at a time, their headers parsed once): the sanitizers and the
# coverage instrument the same code, for 446 s of CPU (ts_bench alone took 686 s in CMake's default batches of 8,
# and the whole build about 1,630 one file at a time). Every
# library is instrumented, as the suite reader reaches every subcommand's step reader through subcommands().
CC=clang CXX=clang++ cmake -S "$TS_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" "${launcher[@]}" \
  -DTRAINSCOPE_FUZZ=ON -DTRAINSCOPE_WITH_CUDA=OFF -DTRAINSCOPE_WITH_MPI=OFF -DTRAINSCOPE_BUILD_TESTS=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
ts_stage fuzz "building the fuzz targets in $build: $(ninja -C "$build" -n fuzz 2>/dev/null | grep -c '^\[' || true) step(s) (clang, ASan+UBSan)"
nice ninja -C "$build" -j2 fuzz

# libFuzzer runs one input at a time on one core: the targets run side by side, one per core, each for its full
# SECONDS (the same fuzzing as one after another, in a fraction of the wall time on a multi-core machine).
parallel="$(nproc 2>/dev/null || echo 1)"
targets=()
for seeds in "$TS_ROOT"/fuzz/corpus/*/; do
  target="$(basename "$seeds")"
  found="$build/corpus/$target"  # what this run discovers; the committed seeds are only read
  findings="$build/findings/$target"
  log="$build/fuzz-$target.log"
  mkdir -p "$found" "$findings"
  rm -f "$log.rc"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  ts_stage fuzz "$target (${seconds} s)"
  targets+=("$target")
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a reader asking for gigabytes is a bug too.
  # The exit status goes to a file: `wait -n` above may already have reaped the process.
  (
    rc=0
    "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$findings/" "$found" "$seeds" >"$log" 2>&1 || rc=$?
    echo "$rc" >"$log.rc"
  ) &
done
wait

status=0
for target in "${targets[@]}"; do
  log="$build/fuzz-$target.log"
  if [ "$(cat "$log.rc" 2>/dev/null)" = 0 ]; then
    echo "$target: $(grep -E '^stat::number_of_executed_units|^Done' "$log" | tr '\n' ' ')" >&2
  else
    tail -n 60 "$log" >&2
    echo "fuzz: $target failed: the input is in $build/findings/$target/ (fix the reader, then add it to fuzz/corpus/$target/)" >&2
    status=1
  fi
done
exit "$status"
