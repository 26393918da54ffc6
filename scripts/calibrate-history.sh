#!/usr/bin/env bash
# How often `history check` is right: series of 100 commits resampled from real samples, with steps (0, 2, 5, 10%,
# 2x) and a drift injected at three noise levels (and the real runs' offsets), beside a z-score at 5 and asv's step
# detection; prints the table and the goals (exit 1 when one is missed). About two minutes on one core.
#   scripts/calibrate-history.sh [RESULT] [--series 50] [--output docs/history-calibration.md]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PY="$(ts_python "numpy, jsonschema")"
PYTHONPATH="$TS_ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m reports.history.calibration "$@"
