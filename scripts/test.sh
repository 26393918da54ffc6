#!/usr/bin/env bash
# Sets up, then runs every check: the source formatting (clang-format), the Python linters (flake8, mypy on
# reports/), the length of the functions in workloads/ and bench/ (scripts/check-function-length.py) and the headers
# compiling alone without include cycles (scripts/check-headers.py) first, as they take seconds to a minute; the C++ unit tests (ctest, GPU tests skip visibly without a GPU); the fuzz targets of the readers
# of untrusted bytes, 20 s each from their seed corpus (scripts/fuzz.sh, its own clang build in build-fuzz); the
# CPU-only build of the trainscope package (build-cpu); the command-line integration tests and result-format tests
# (pytest, multi-rank ones under mpirun). Each stage is announced with the time it takes on an idle 2-core VM
# (estimates for issue #35 from the CPU time of sampled compiles and the stages' times under load: a busy machine
# takes several times as long; with build/, build-fuzz/ and build-cpu/ already there, the builds take seconds), every
# line carries the time since the start, and pytest names each test as it ends (-v), so no stage is a long silence.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# What only the tests need: pytest and pytest-xdist (its workers), hypothesis (property tests of the readers),
# Chromium to open the HTML report headless, dpkg-dev (dpkg-shlibdeps) to build the Debian package, a real Slurm
# (slurm-wlm: slurmctld, slurmd, slurm-client with sbatch/srun; munge) that tests/integration/test_slurm.py starts on this machine with scripts/slurm-local.sh, and
# iproute2 (ip, tc) for the cluster of network namespaces (tests/integration/test_netns_cluster.py), and PyTorch for
# the external check of every model's losses (tests/integration/test_pytorch_agreement.py; a few minutes to install), and
# PyYAML for MLPerf's compliance checker (tests/integration/test_mllog_compliance.py), and a PostgreSQL server that
# tests/reports/postgres_server.py starts in a temporary folder for the history store's tests.
# And clang with libFuzzer's runtime for scripts/fuzz.sh. They install while setup.sh builds (a few minutes on a
# fresh machine, PyTorch the largest: the network and the disk, while the build keeps the cores).
PACKAGES=(python3-pytest python3-pytest-xdist python3-hypothesis python3-prometheus-client chromium fonts-dejavu-core
  dpkg-dev slurm-wlm munge iproute2 python3-torch python3-yaml postgresql clang libclang-rt-14-dev)
ts_stage test "set-up, every target (the unit tests, micro-benchmarks too), the tests' packages installed meanwhile: packages a few minutes on a fresh machine, the build (a unity build in a new build/) about 5.5 min from scratch"
TS_BACKGROUND_PACKAGES="${PACKAGES[*]}" "$TS_ROOT/scripts/setup.sh"  # fails if their install failed
ts_mpi_env
cd "$TS_ROOT"

ts_stage test "== format and lint: clang-format, flake8, mypy, function length, headers alone and include cycles (about 1.5 min under ccache; 4.5 min without, after a fresh unity build, whose batches prove few headers)"
scripts/check-format.sh
scripts/lint-python.sh
scripts/check-function-length.py
scripts/check-headers.py

ts_stage test "== ctest: the C++ unit tests (under 1 min: 34 s measured without ccache)"
ctest --test-dir "$TS_BUILD" --output-on-failure -j2

ts_stage test "== fuzz: a clang unity build of its own in build-fuzz (about 4-6 min the first time), then 6 targets x 20 s, one per core"
scripts/fuzz.sh

# The package tests (tests/integration/test_package.py) install the CPU-only package, built from a CPU-only build
# of trainscope in build-cpu (build/ itself where this machine has no CUDA toolkit): built here, as a stage of its own.
ts_stage test "== the CPU-only build for the trainscope package (build-cpu, a unity build: about 3.5 min the first time, seconds when build/ has no CUDA)"
scripts/package.sh cpu >/dev/null

# Four workers on two cores: most integration tests wait (for mpirun to start, a timeout, a dead rank) far more than
# they compute (a sample: 55 s of CPU in 308 s run one at a time), and three files at a time kept the cores 165% busy
# (749 s of CPU in 455 s); four: 7 min 3 s against 7 min 35 s (TS_TEST_CPU_LOG=FILE says each test's CPU). A file
# is the unit of work (--dist loadgroup, each test in its file's group (tests/conftest.py): its tests in order, its
# module fixtures once), the README's chains one each; `long` files start first. The tests whose outcome timing
# decides (marked `alone`: deadlines, which rank notices first) then run one at a time.
# Python keeps the bytecode it compiles (tests/ and reports/ __pycache__, ignored by git): with
# PYTHONDONTWRITEBYTECODE set, as some images set it, every pytest process compiled and rewrote the 92 test modules
# again (1.5 s of CPU each).
unset PYTHONDONTWRITEBYTECODE
ts_stage test "== pytest: the command-line, report and README tests (about 18 min; 4 workers, each test named as it ends)"
PY="$(ts_python "pytest, xdist, jsonschema")"
TRAINSCOPE="$TS_BUILD/trainscope" "$PY" -m pytest -v -rs --durations=15 -p no:cacheprovider -n "${TS_PYTEST_WORKERS:-4}" --dist loadgroup \
  -m "not alone" tests
ts_stage test "== pytest: the tests timing decides, alone (about 3.5 min)"
TRAINSCOPE="$TS_BUILD/trainscope" "$PY" -m pytest -v -rs --durations=5 -p no:cacheprovider -m alone tests
ts_stage test "every check passed"
