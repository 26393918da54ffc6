#!/usr/bin/env bash
# The first contact with a lent GPU machine: ONE device call of at most 8 minutes of command time that brings back
# the most telling evidence first (docs/gpu-validation.md has the plan, the run(...) line and how to read it):
# preflight (nvidia-smi, compute mode, `ldd -r` of the binaries, the library versions found, env, disk and
# memory), the GPU tests one process per suite, `trainscope env`, each model on cuda:0 in float32 and bf16, NCCL at
# world 1 with and without CUDA graphs, two processes on the one GPU, the GPU links, the kernels against their
# ceilings, a CUPTI trace, then GPT-2-sized steps while time is left. A step starts only if its limit ends before
# the deadline; after every step $OUT holds first-contact-summary.md, first-contact-logs.tar.gz and
# first-contact-traces.tar.gz (scripts/gpu-runner.sh), so a call cut short still brings back all that ran.
#   scripts/gpu-first-contact.sh [--bundle gpu-bundle.tar.gz] [--deadline 480] [--out DIR]   (DIR: $OUT, else results/gpu)
#   scripts/gpu-first-contact.sh --list        the steps and their limits (this checkout's build lists the GPU tests)
#   TS_GPU_DEADLINE=SECONDS                     the deadline, as --deadline
# Exit: 0 when no step failed, 1 when one did (the summary says which), 2 bad usage.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu-plan.sh"
if [ "${1:-}" = --list ]; then
  gpu_list plan_first_contact
  exit 0
fi
gpu_setup first-contact 480 "$@" || exit
if [ ${#GPU_ARGS[@]} -ne 0 ]; then
  echo "gpu-first-contact: error: it takes no step names (the re-run does: scripts/gpu-rerun.sh) ($(gpu_usage_line first-contact))" >&2
  exit 2
fi
plan_first_contact
runner_finish
