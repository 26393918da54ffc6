#!/usr/bin/env bash
# Runs a command as root of a throw-away copy of this machine, to install a package for real (dpkg checks its
# Depends) and run it there, leaving this machine untouched:
#   tests/tools/clean_root.sh [--no-cuda] DEBDIR OUTDIR COMMAND           (as root)
# The copy is an overlay of / in a mount namespace of its own, whose writes go to a tmpfs (gone when the command
# ends: nothing is mounted or written outside it but what COMMAND writes in /out); DEBDIR appears in
# it as /debs and OUTDIR as /out (kept), /proc /dev /sys are this machine's. --no-cuda hides every /usr/local/cuda*
# directory under an empty tmpfs: a machine without NVIDIA's libraries (the toolkit here is no Debian package,
# so dpkg knows nothing of it either way). COMMAND runs in bash with a plain environment (Debian's PATH, no
# pyenv, Open MPI allowed as root).
set -euo pipefail
# Every mount below happens in a mount namespace of this script's own, never in the machine's.
if [[ -z ${TS_CLEAN_ROOT_NS:-} ]]; then TS_CLEAN_ROOT_NS=1 exec unshare --mount --propagation private "$0" "$@"; fi
hide_cuda=0
[[ ${1:-} == --no-cuda ]] && hide_cuda=1 && shift
[[ $# -eq 3 ]] || { echo "usage: $0 [--no-cuda] DEBDIR OUTDIR COMMAND" >&2; exit 2; }
debs="$(realpath "$1")" out="$(realpath "$2")" command="$3"

# The scratch place: an empty directory of this machine, covered by a tmpfs in this namespace only, removed at the end.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/ts-clean-root.XXXXXX")"
trap 'umount -R -l "$scratch" && rmdir "$scratch"' EXIT
mount -t tmpfs tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work" "$scratch/root"
root="$scratch/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$root"
if [[ $hide_cuda == 1 ]]; then
  for dir in /usr/local/cuda*; do
    # /usr/local/cuda is a link to /usr/local/cuda-13.0: the directories are what is hidden (the link then dangles).
    if [[ -d $dir && ! -L $dir ]]; then mount -t tmpfs tmpfs "$root$dir"; fi
  done
fi
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mkdir -p "$root/debs" "$root/out"
mount --bind "$debs" "$root/debs"
mount --bind "$out" "$root/out"
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 /bin/bash -c "$command"
