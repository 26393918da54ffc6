#!/usr/bin/env bash
# A real history (issue #38): trainscope's own commits, each built (CPU only) and measured, added to a history
# under its commit, then `history check`, `show` and `report` of the result, by this checkout's tools.
#   scripts/history-real.sh [--out DIR] [--runs N] COMMIT...     (oldest first; not part of CI: about 6 min a commit)
# The commits are checked out in turn in one detached worktree, DIR/src, and built without CUDA in one folder,
# DIR/build, so that each build compiles only what changed since the commit before (an old tree from scratch is
# about 4.5 min on 2 cores); each is measured N times (default 2) from its own tree: sync ps on mlp small at 2 ranks
# (the step 5fae52f took from 72 to 4.9 ms), the CNN on one process (issue #20's CPU kernels) and its own
# bench/suites/ci.toml. The results stay in DIR/results, the history in DIR/history.sqlite, check's outputs and
# the trend pages beside them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

out="$TS_ROOT/results/history-real"
runs=2
commits=()
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "history-real: error: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) commits+=("$1"); shift ;;
  esac
done
((${#commits[@]} >= 1)) || { echo "history-real: error: name the commits to build, oldest first (see --help)" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]?$ ]] || { echo "history-real: error: --runs $runs: a count from 1 to 99" >&2; exit 2; }
tool="$TS_BUILD/trainscope"
[[ -x $tool ]] || { echo "history-real: error: no $tool: run scripts/setup.sh first (its history tool adds the runs)" >&2; exit 2; }
full=()
for c in "${commits[@]}"; do
  sha=$(git -C "$TS_ROOT" rev-parse --verify --quiet "$c^{commit}") || { echo "history-real: error: $c is not a commit here" >&2; exit 2; }
  full+=("$sha")
done
ts_mpi_env
mkdir -p "$out/results"
src="$out/src" build="$out/build"
[[ -d $src ]] || git -C "$TS_ROOT" worktree add --detach "$src" "${full[0]}" >/dev/null
db="$out/history.sqlite"

n=0
for sha in "${full[@]}"; do
  n=$((n + 1))
  short=${sha:0:10}
  ts_stage history-real "[$n/${#full[@]}] $short: $(git -C "$TS_ROOT" log -1 --format=%s "$sha" | cut -c1-90)"
  git -C "$src" checkout --quiet --detach "$sha"
  # shellcheck disable=SC2086
  { cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TRAINSCOPE_CMAKE_ARGS:-} -DTRAINSCOPE_WITH_CUDA=OFF \
      -DTRAINSCOPE_BUILD_TESTS=OFF && cmake --build "$build" --target trainscope; } >"$out/build-$short.log" 2>&1 ||
    { echo "history-real: error: $short did not build (the end of $out/build-$short.log):" >&2; tail -5 "$out/build-$short.log" >&2; exit 1; }
  made=()
  for r in $(seq 1 "$runs"); do
    ps="$out/results/$short-ps-$r.json" ci="$out/results/$short-ci-$r.json" cnn="$out/results/$short-cnn-$r.json"
    (cd "$src" && mpirun -np 2 "$build/trainscope" train --model mlp --preset small --batch 32 --steps 40 --sync ps \
      --no-ceiling --json "$ps" >/dev/null)
    (cd "$src" && "$build/trainscope" train --model cnn --batch 32 --steps 13 --warmup-steps 3 --no-ceiling --json "$cnn" >/dev/null)
    (cd "$src" && mpirun -np 2 "$build/trainscope" suite bench/suites/ci.toml --json "$ci" >/dev/null)
    made+=("$ps" "$ci" "$cnn")
  done
  "$tool" history add "${made[@]}" --commit "$sha" --branch main --db "$db"
done

ts_stage history-real "the history of ${#full[@]} commit(s): check, then the trend pages"
status=0
"$tool" history check --db "$db" --markdown "$out/check.md" --junit "$out/check.xml" || status=$?
"$tool" history report --db "$db" -o "$out/report" --title "trainscope's own history"
echo "history-real: $db, $out/check.md, $out/report/index.html (check exit $status)"
