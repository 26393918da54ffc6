#!/usr/bin/env bash
# Lints reports/ (the Python report tool) with flake8 and mypy, both configured in setup.cfg. Both always run, so
# that one call lists every finding; the exit status is non-zero when either found anything.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# Debian's packages, not PyPI's: mypy must see the numpy, jinja2 and jsonschema the tool runs with.
ts_apt_install flake8 mypy python3-numpy python3-jinja2 python3-jsonschema python3-matplotlib
PY="$(ts_python "flake8, mypy, numpy, jinja2, jsonschema")"
cd "$TS_ROOT"

status=0
echo "== flake8 reports" >&2
"$PY" -m flake8 reports || status=1
echo "== mypy reports" >&2
"$PY" -m mypy --cache-dir "$TS_BUILD/mypy-cache" || status=1
exit "$status"
