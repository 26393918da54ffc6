#!/usr/bin/env bash
# Sets up, then runs every check: the source formatting (clang-format) and the Python linters (flake8, mypy on
# reports/) first, as they take seconds; the C++ unit tests (ctest, GPU tests skip visibly without a GPU); the
# fuzz targets of the readers of untrusted bytes, 20 s each from their seed corpus (scripts/fuzz.sh, its own
# clang build in build-fuzz); the command-line integration tests and result-format tests (pytest, multi-rank
# ones under mpirun).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$TS_ROOT/scripts/setup.sh"
# What only the tests need: pytest, hypothesis (property tests of the readers), Chromium to open the HTML report headless,
# dpkg-dev (dpkg-shlibdeps) to build the Debian package, a real Slurm (slurm-wlm: slurmctld, slurmd, slurm-client with
# sbatch/srun; munge) that tests/integration/test_slurm.py starts on this machine with scripts/slurm-local.sh, and
# iproute2 (ip, tc) for the cluster of network namespaces (tests/integration/test_netns_cluster.py), and PyTorch for
# the external check of every model's losses (tests/integration/test_pytorch_agreement.py; a few minutes to install).
ts_apt_install python3-pytest python3-hypothesis python3-prometheus-client chromium fonts-dejavu-core dpkg-dev slurm-wlm munge iproute2 python3-torch
ts_mpi_env
cd "$TS_ROOT"

echo "== format" >&2
scripts/check-format.sh
scripts/lint-python.sh

echo "== ctest" >&2
ctest --test-dir "$TS_BUILD" --output-on-failure -j2

echo "== fuzz" >&2
scripts/fuzz.sh

echo "== pytest" >&2
PY="$(ts_python "pytest, jsonschema")"
TRAINSCOPE="$TS_BUILD/trainscope" "$PY" -m pytest -q -p no:cacheprovider tests
