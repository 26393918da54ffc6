#!/usr/bin/env bash
# Builds the Debian package of trainscope (cmake/TrainscopePackaging.cmake) from build/ and prints its path:
#   scripts/package.sh [OUTDIR]      (default: build/)
# Install it with `apt-get install ./trainscope_<version>_<arch>.deb` (which brings the Debian libraries it
# depends on), or unpack it anywhere with `dpkg -x`: the binary finds its reports and suites beside itself.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
out="${1:-$TS_BUILD}"
[[ -f "$TS_BUILD/CPackConfig.cmake" ]] || { echo "package: no $TS_BUILD/CPackConfig.cmake: run scripts/setup.sh first" >&2; exit 2; }
mkdir -p "$out"
cmake --build "$TS_BUILD" --target trainscope >&2
cpack --config "$TS_BUILD/CPackConfig.cmake" -G DEB -B "$out" >&2
ls "$out"/trainscope_*.deb
