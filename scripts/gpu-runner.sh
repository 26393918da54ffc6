# shellcheck shell=bash
# The step runner of the GPU scripts (scripts/gpu-first-contact.sh, scripts/gpu-rerun.sh): steps under one
# deadline, each with its own time limit, and an output folder that is whole after every step. Sourced, never run.
#
# A lent GPU machine gives one call a few minutes and brings back only what is in $OUT when the call ends, also
# when it is cut short; so:
#   - a step starts only if its limit (plus the grace before SIGKILL) ends before the deadline, else it is recorded
#     as skipped;
#   - each step runs in its own process group under `timeout`, so a hang costs its limit and no more, and a
#     faulting process never takes the next step with it;
#   - each step ends with exactly one line on stdout, "step NAME: ok|FAILED|TIME LIMIT|skipped|CUT ...", printed once
#     the output folder holds that step;
#   - after every step the output folder is rewritten: NAME-summary.md (the table so far), NAME-logs.tar.gz (every
#     log and result JSON) and NAME-traces.tar.gz (traces, kept apart so that a large trace never costs the logs),
#     each capped under the device's 16 MiB a file, each written to a temporary name and renamed, so a kill
#     mid-write leaves the previous good copy.
#
#   runner_init RUN_NAME OUT_DIR DEADLINE_S [T0_MS]  (the deadline counts from T0_MS, default: now)
#   runner_header LINE                          (a line above the table, e.g. the GPU's name)
#   runner_step NAME LIMIT_S CMD [ARG...]       (CMD: a program or a function)
#   runner_skip NAME REASON                     (a step that cannot run here, with its line)
#   runner_finish                               (prints the table; returns 1 if a step failed)
# Inside a step: $RUN_LOGS (its result files go there) and $RUN_TRACES (trace folders go there).
# TS_GPU_ONLY="PATTERN,...": run only the steps whose names match one of the glob patterns (a re-run).
# RUNNER_LIST=1: runner_step and runner_skip print "NAME LIMIT_S" and run nothing (what a plan would run).

RUNNER_CAP_BYTES="${RUNNER_CAP_BYTES:-15728640}"    # 15 MiB: under the device's 16 MiB a file
RUNNER_LOG_KEEP_BYTES="${RUNNER_LOG_KEEP_BYTES:-4194304}"  # a longer log keeps its first MiB and its last 3
RUNNER_KILL_AFTER="${RUNNER_KILL_AFTER:-5}"         # seconds between a step's SIGTERM and its SIGKILL

_runner_now_ms() {
  local t="${EPOCHREALTIME/[.,]/}"
  echo $((t / 1000))
}

runner_init() {
  RUN_NAME="$1"
  RUN_OUT="$2"
  RUN_DEADLINE_MS=$((${4:-$(_runner_now_ms)} + $3 * 1000))
  RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ts-gpu-$RUN_NAME.XXXXXX")"
  RUN_LOGS="$RUN_DIR/$RUN_NAME-logs"
  RUN_TRACES="$RUN_DIR/$RUN_NAME-traces"
  RUN_ROWS="$RUN_DIR/rows.md"
  RUN_HEADER="$RUN_DIR/header.md"
  RUN_FAILED=0
  RUN_STEPS=0
  RUN_LEFT_LOGS=""
  RUN_LEFT_TRACES=""
  RUN_SKIPPED=0
  RUN_CURRENT=""
  RUN_CHILD=""
  RUN_FOOTER=""
  RUN_TRACES_STAMP="$RUN_DIR/traces.stamp"
  mkdir -p "$RUN_OUT" "$RUN_LOGS" "$RUN_TRACES"
  touch -d @0 "$RUN_TRACES_STAMP"
  : >"$RUN_ROWS"
  {
    echo "# trainscope GPU run: $RUN_NAME"
    echo
    echo "started $(date -u +%FT%TZ) on $(uname -n); deadline $3 s after the call's start"
  } >"$RUN_HEADER"
  export RUN_LOGS RUN_TRACES
  trap '_runner_signal TERM' TERM
  trap '_runner_signal INT' INT
  _runner_refresh
}

runner_header() {
  echo "$*" >>"$RUN_HEADER"
  _runner_refresh
}

# True when NAME is to run (TS_GPU_ONLY unset, or NAME matches one of its patterns).
runner_selected() {
  [ -z "${TS_GPU_ONLY:-}" ] && return 0
  local p IFS=,
  for p in $TS_GPU_ONLY; do
    # shellcheck disable=SC2053  # a glob on purpose
    [[ "$1" == $p ]] && return 0
  done
  return 1
}

# The line that best says why a step failed. Out of time: its last line (where it stood). Else, first found of:
# the GoogleTest tests that failed; trainscope's own error line; the last line naming an error; the last line.
# The runner's own first line is not the step's.
_runner_last_error() {
  local log="$1" rc="$2" line=""
  if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then
    line="$(tail -n +2 "$log" | sed -n 's/^\[  FAILED  \] \([A-Za-z_][^ ]*\)\( .*\)\{0,1\}$/\1/p' | sort -u | head -n 8 | paste -sd, -)"
    [ -n "$line" ] && line="failed tests: ${line//,/, }"
    [ -z "$line" ] && line="$(tail -n +2 "$log" | grep -a -E '^(\[rank [0-9]+\] )?trainscope: error:' | tail -n 1)"
    [ -z "$line" ] && line="$(tail -n +2 "$log" | grep -a -i -E 'error|fail|abort|fatal|terminate|what\(\)|not found|undefined symbol|refus|timed? ?out' | tail -n 1)"
  fi
  [ -z "$line" ] && line="$(tail -n +2 "$log" | grep -a -v '^[[:space:]]*$' | tail -n 1)"
  line="${line//|//}"
  line="${line//$'\r'/}"
  echo "${line:0:240}"
}

# A log over RUNNER_LOG_KEEP_BYTES keeps its head and its tail (the start says what ran, the end why it stopped).
_runner_trim_log() {
  local f="$1" size head tail
  size=$(stat -c %s "$f" 2>/dev/null || echo 0)
  [ "$size" -le "$RUNNER_LOG_KEEP_BYTES" ] && return 0
  head=$((RUNNER_LOG_KEEP_BYTES / 4))
  tail=$((RUNNER_LOG_KEEP_BYTES - head))
  {
    head -c "$head" "$f"
    printf '\n[... %d bytes of this log cut here: it was %d bytes ...]\n' $((size - head - tail)) "$size"
    tail -c "$tail" "$f"
  } >"$f.trim" && mv -f "$f.trim" "$f"
}

_runner_row() {  # NAME RESULT SECONDS NOTE
  echo "| $1 | $2 | $3 | $4 |" >>"$RUN_ROWS"
}

runner_skip() {
  if [ -n "${RUNNER_LIST:-}" ]; then
    echo "$1 0"
    return 0
  fi
  runner_selected "$1" || return 0
  RUN_STEPS=$((RUN_STEPS + 1))
  RUN_SKIPPED=$((RUN_SKIPPED + 1))
  _runner_row "$1" "skipped: $2" 0 ""
  _runner_refresh
  echo "step $1: skipped: $2"
}

runner_step() {
  local name="$1" limit="$2"
  shift 2
  if [ -n "${RUNNER_LIST:-}" ]; then
    echo "$name $limit"
    return 0
  fi
  runner_selected "$name" || return 0
  RUN_STEPS=$((RUN_STEPS + 1))
  local now left_ms need_ms
  now=$(_runner_now_ms)
  left_ms=$((RUN_DEADLINE_MS - now))
  need_ms=$(((limit + RUNNER_KILL_AFTER) * 1000))
  if [ "$need_ms" -gt "$left_ms" ]; then
    local why="skipped: would pass the deadline (needs up to $((limit + RUNNER_KILL_AFTER)) s, $((left_ms > 0 ? left_ms / 1000 : 0)) s left)"
    RUN_SKIPPED=$((RUN_SKIPPED + 1))
    _runner_row "$name" "$why" 0 ""
    _runner_refresh
    echo "step $name: $why"
    return 0
  fi
  local log="$RUN_LOGS/$name.log" rc t0=$now
  echo "# step $name (limit $limit s): $*" >"$log"
  if declare -F "$1" >/dev/null; then  # a function: timeout runs programs, so through a bash that inherits it
    export -f "${1?}"  # the function that $1 names
    set -- bash -c '"$@"' ts-step "$@"
  fi
  # Its own process group (timeout makes one) and a background wait: a TERM to this runner is handled at once.
  timeout --kill-after="$RUNNER_KILL_AFTER" "$limit" "$@" >>"$log" 2>&1 </dev/null &
  RUN_CHILD=$!
  RUN_CURRENT="$name"
  _runner_summary
  wait "$RUN_CHILD"
  rc=$?
  RUN_CHILD=""
  RUN_CURRENT=""
  local ms=$(($(_runner_now_ms) - t0)) secs result line
  secs="$((ms / 1000)).$(((ms % 1000) / 100))"
  _runner_trim_log "$log"
  case $rc in
  0) result="ok" ;;
  124 | 137) result="TIME LIMIT $limit s (exit $rc)" ;;
  *) result="FAILED (exit $rc)" ;;
  esac
  if [ $rc -eq 0 ]; then
    _runner_row "$name" ok "$secs" ""
    line="step $name: ok in $secs s"
  else
    RUN_FAILED=$((RUN_FAILED + 1))
    line="$(_runner_last_error "$log" "$rc")"
    _runner_row "$name" "$result" "$secs" "${line:-no output}"
    line="step $name: $result in $secs s: ${line:-no output}"
  fi
  _runner_refresh
  echo "$line"  # once the output folder holds this step
  return 0
}

# Writes FILE from stdin through a temporary name in the same folder and a rename.
_runner_write() {
  local dest="$1" tmp
  tmp="$(dirname "$dest")/.$(basename "$dest").part"
  cat >"$tmp" && mv -f "$tmp" "$dest"
}

# Archives SRC_DIR into DEST (.tar.gz) under RUNNER_CAP_BYTES: if too large, the largest files are left out one
# by one and named in LEFT-OUT.txt inside it. Prints what was left out, "name (bytes)" per line.
_runner_archive() {
  local src="$1" dest="$2" tmp sizes list left=""
  local parent base
  parent="$(dirname "$src")"
  base="$(basename "$src")"
  tmp="$(dirname "$dest")/.$(basename "$dest").part"
  sizes="$RUN_DIR/$(basename "$dest").sizes"
  list="$RUN_DIR/$(basename "$dest").list"
  rm -f "$src/LEFT-OUT.txt"
  (cd "$parent" && find "$base" -type f -printf '%s %p\n') | sort -n >"$sizes"
  while :; do
    cut -d' ' -f2- "$sizes" >"$list"
    if [ -n "$left" ]; then
      printf 'left out of this archive to keep it under %d bytes:\n%s' "$RUNNER_CAP_BYTES" "$left" >"$src/LEFT-OUT.txt"
      echo "$base/LEFT-OUT.txt" >>"$list"
    fi
    tar -C "$parent" -czf "$tmp" --no-recursion -T "$list"
    if [ "$(stat -c %s "$tmp")" -le "$RUNNER_CAP_BYTES" ] || [ ! -s "$sizes" ]; then
      break
    fi
    local biggest
    biggest="$(tail -n 1 "$sizes")"
    sed -i '$d' "$sizes"
    left="$left${biggest#* } (${biggest%% *} bytes)"$'\n'
  done
  mv -f "$tmp" "$dest"
  printf '%s' "$left"
}

# The summary as it stands: the header, a row per step, the step running now, what the archives left out.
_runner_summary() {
  {
    cat "$RUN_HEADER"
    echo
    echo "| step | result | seconds | last error line |"
    echo "|---|---|---|---|"
    cat "$RUN_ROWS"
    if [ -n "${RUN_CURRENT:-}" ]; then
      echo "| $RUN_CURRENT | running: the call ended here if nothing follows | | |"
    fi
    if [ -n "$RUN_LEFT_LOGS$RUN_LEFT_TRACES" ]; then
      echo
      echo "Left out of the archives (each is kept under $RUNNER_CAP_BYTES bytes):${RUN_LEFT_LOGS:+ logs: $RUN_LEFT_LOGS}${RUN_LEFT_TRACES:+ traces: $RUN_LEFT_TRACES}"
    fi
    [ -n "${RUN_FOOTER:-}" ] && printf '\n%s\n' "$RUN_FOOTER"
  } >"$RUN_DIR/summary.md"
  _runner_write "$RUN_OUT/$RUN_NAME-summary.md" <"$RUN_DIR/summary.md"
}

# Rewrites the output folder: the summary, the log archive and (when a step wrote traces) the trace archive.
_runner_refresh() {
  local left
  _runner_summary
  cp "$RUN_DIR/summary.md" "$RUN_LOGS/summary.md"
  left="$(_runner_archive "$RUN_LOGS" "$RUN_OUT/$RUN_NAME-logs.tar.gz")"
  RUN_LEFT_LOGS="${left//$'\n'/; }"
  if [ -n "$(find "$RUN_TRACES" -type f -newer "$RUN_TRACES_STAMP" -print -quit)" ]; then
    touch "$RUN_TRACES_STAMP"
    left="$(_runner_archive "$RUN_TRACES" "$RUN_OUT/$RUN_NAME-traces.tar.gz")"
    RUN_LEFT_TRACES="${left//$'\n'/; }"
  fi
  [ -n "$RUN_LEFT_LOGS$RUN_LEFT_TRACES" ] && _runner_summary
  return 0
}

# The call is ending (the device tool's limit, a ^C): stop the step, say so, and leave the folder whole.
_runner_signal() {
  local code=$((128 + $(kill -l "$1")))
  trap - TERM INT
  if [ -n "${RUN_CHILD:-}" ]; then
    kill -TERM "$RUN_CHILD" 2>/dev/null
    _runner_row "$RUN_CURRENT" "CUT by SIG$1" "" "the call ended during this step"
    local name="$RUN_CURRENT"
    RUN_CURRENT=""
    _runner_refresh
    echo "step $name: CUT by SIG$1 (the call ended)"
    exit "$code"
  fi
  _runner_refresh
  exit "$code"
}

runner_finish() {
  local end_ms
  end_ms=$(_runner_now_ms)
  RUN_FOOTER="$RUN_STEPS steps: $RUN_FAILED failed, $RUN_SKIPPED skipped; ended $(((RUN_DEADLINE_MS - end_ms) / 1000)) s before the deadline"
  _runner_refresh
  trap - TERM INT
  echo
  cat "$RUN_DIR/summary.md"
  echo
  echo "in $RUN_OUT: $(cd "$RUN_OUT" && echo *)"
  [ "$RUN_FAILED" -eq 0 ]
}
