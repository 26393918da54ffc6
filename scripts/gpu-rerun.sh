#!/usr/bin/env bash
# The second, shorter call on a lent GPU machine, after fixes (docs/gpu-validation.md): the library check, then the
# first contact's steps named here (what failed; glob patterns such as 'tests-*' or 'pair-*'), then the peers
# timed beside trainscope in the same call: nccl-tests' all_reduce_perf, all_gather_perf, reduce_scatter_perf and
# sendrecv_perf at -g 1 (when the bundle carries them) and PyTorch's matrix product and copies (scripts/gpu-peers.py,
# CUDA events). Sized for what is left of the 15 minutes after the first call: default deadline 150 s.
#   scripts/gpu-rerun.sh [--bundle gpu-bundle.tar.gz] [--deadline 150] [--out DIR] [--no-peers] [STEP,STEP...]
#   (TS_GPU_DEADLINE=SECONDS: the deadline, as --deadline)
# $OUT then holds rerun-summary.md, rerun-logs.tar.gz and rerun-traces.tar.gz. Exit: 0 when no step failed, 1 when
# one did, 2 bad usage (a name that is no step of the first contact: scripts/gpu-first-contact.sh --list).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu-plan.sh"
peers=1
args=()
for a in "$@"; do
  if [ "$a" = --no-peers ]; then peers=0; else args+=("$a"); fi
done
gpu_setup rerun 150 "${args[@]}" || exit
steps="$(IFS=,; echo "${GPU_ARGS[*]}")"
if [ -n "$steps" ]; then
  names="$(RUNNER_LIST=1 plan_first_contact | cut -d' ' -f1)"
  IFS=, read -r -a patterns <<<"$steps"
  for p in "${patterns[@]}"; do
    found=0
    while IFS= read -r n; do
      # shellcheck disable=SC2053  # a glob on purpose
      [[ "$n" == $p ]] && found=1 && break
    done <<<"$names"
    if [ $found -eq 0 ]; then
      echo "gpu-rerun: error: no step of the first contact is named '$p' (scripts/gpu-first-contact.sh --list)" >&2
      exit 2
    fi
  done
fi
TS_GPU_ONLY=preflight-libs plan_preflight  # the bundle is new after fixes: its libraries are checked again
[ -n "$steps" ] && TS_GPU_ONLY="$steps" plan_first_contact
[ $peers -eq 1 ] && plan_peers
runner_finish
