#!/usr/bin/env bash
# Checks that C++/CUDA sources are formatted as .clang-format says: prints each file that is not and exits 1
# (0 when all are; 2 when clang-format itself fails). --fix formats those files in place instead (and exits 0).
# Without FILEs: every tracked *.h *.cpp *.cu *.cuh outside third-party directories.
#   scripts/check-format.sh [--fix] [FILE...]
# The tree is formatted with Debian's clang-format 14; another major version formats some constructs differently,
# so it is warned about. CLANG_FORMAT=/path/to/clang-format picks the binary.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi
case "${1:-}" in
  -h|--help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
  -*) echo "check-format: unknown option $1 (usage: scripts/check-format.sh [--fix] [FILE...])" >&2; exit 2 ;;
esac

CF="${CLANG_FORMAT:-clang-format}"
[ -n "${CLANG_FORMAT:-}" ] || ts_apt_install clang-format
if ! version="$("$CF" --version 2>&1)"; then
  echo "check-format: cannot run $CF: $version" >&2
  exit 2
fi
major="$(sed -n 's/.*version \([0-9]*\)\..*/\1/p' <<<"$version")"
if [ "$major" != 14 ]; then
  echo "check-format: warning: $CF is version ${major:-unknown}, not 14: it may disagree with the tree's formatting" >&2
fi
# The repository's style whatever directory a file is in (clang-format would otherwise look for the nearest
# .clang-format above the file, and fall back to LLVM's style outside the tree).
style="file:$TS_ROOT/.clang-format"
if ! err="$("$CF" --style="$style" --dump-config 2>&1 >/dev/null)"; then
  echo "check-format: $CF cannot read $TS_ROOT/.clang-format: $err" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  files=("$@")
else
  cd "$TS_ROOT"
  mapfile -t files < <(git ls-files -- '*.h' '*.cpp' '*.cu' '*.cuh' \
    ':(exclude)build/**' ':(exclude)third_party/**' ':(exclude)third-party/**' ':(exclude)external/**' ':(exclude)vendor/**')
fi

for f in "${files[@]}"; do
  if [ ! -f "$f" ]; then
    echo "check-format: $f: no such file" >&2
    exit 2
  fi
done
[ ${#files[@]} -gt 0 ] || { echo "check-format: no files to check" >&2; exit 0; }

# One clang-format for many files (xargs splits long lists): a process per file is 30 times slower. Each
# unformatted file yields "FILE:LINE:COL: error: code should be clang-formatted [-Wclang-format-violations]".
rc=0
out="$(printf '%s\0' "${files[@]}" | xargs -0 "$CF" --style="$style" --dry-run --Werror --ferror-limit=1 2>&1)" || rc=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted \[-Wclang-format-violations\]$/\1/p' <<<"$out" | sort -u)
if [ "$rc" != 0 ] && [ ${#bad[@]} = 0 ]; then
  echo "check-format: $CF failed: $out" >&2
  exit 2
fi
unformatted=${#bad[@]}
[ "$unformatted" = 0 ] || printf '%s\n' "${bad[@]}"
if [ "$fix" = 1 ] && [ "$unformatted" != 0 ]; then
  printf '%s\0' "${bad[@]}" | xargs -0 "$CF" --style="$style" -i
fi

if [ "$unformatted" = 0 ]; then
  echo "check-format: ${#files[@]} file(s), all formatted" >&2
elif [ "$fix" = 1 ]; then
  echo "check-format: formatted the $unformatted file(s) above (of ${#files[@]})" >&2
else
  echo "check-format: $unformatted of ${#files[@]} file(s) not formatted (scripts/check-format.sh --fix formats them)" >&2
  exit 1
fi
