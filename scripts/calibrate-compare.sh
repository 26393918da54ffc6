#!/usr/bin/env bash
# How often `compare` is right: injected slowdowns (0, 2, 5, 10%, 2x, 1000x) at three noise levels on pairs
# resampled from real samples; prints the table and the goals (exit 1 when one is missed).
#   scripts/calibrate-compare.sh [RESULT] [--pairs 50] [--output docs/compare-calibration.md]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PY="$(ts_python "numpy, jsonschema")"
PYTHONPATH="$TS_ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m reports.compare.calibration "$@"
