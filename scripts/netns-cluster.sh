#!/usr/bin/env bash
# A cluster of network hosts on one machine, for MPI's TCP transport to cross real (virtual) links.
#
# Every piece lives inside namespaces, so the root namespace's addresses and routes stay untouched:
#   <p>-head   the launcher's seat: holds the bridge br0 (10.77.0.1/24), where mpirun runs;
#   <p>-hI     host I (1..N): eth0 = 10.77.0.(10+I)/24, a veth to br0; loopback up.
# A network namespace carries no hostname, so each one gets a persistent UTS namespace (bound to
# /run/<p>-netns/<ns>.uts) whose hostname is its name; `exec` and scripts/netns-rsh enter both. Names resolve
# through /etc/netns/<ns>/hosts, which `ip netns exec` mounts over /etc/hosts in that namespace.
# --shape HOST=RATE puts a tbf qdisc (bandwidth, not delay: netem may be missing) on both ends of the host's
# veth, so its traffic is capped both ways, its bucket as small as tbf keeps the rate with (burst_bytes). <p> is
# $TS_NETNS_PREFIX (default ts), the subnet $TS_NETNS_NET (default 10.77.0, a /24): tests and a user's cluster can
# live side by side.
set -euo pipefail

usage() {
  cat >&2 <<EOF
usage: $0 up N [--shape HOST=RATE]... | down | hostfile [SLOTS] | exec HOST CMD... | launch CMD...
       | shape HOST RATE|off | link HOST up|down | status
  up N          create hosts $P-h1..$P-hN (again: tears the old cluster down first)
  --shape H=R   cap host H's link at rate R both ways (tc tbf; e.g. $P-h4=20mbit)
  down          remove every namespace, link and file of the cluster (nothing there: no error)
  hostfile      print an Open MPI hostfile (SLOTS per host, default 1)
  exec H CMD    run CMD on host H (its network, hostname and /etc/hosts)
  launch CMD    run CMD in the launcher's namespace ($P-head) with Open MPI set for the cluster
                (OMPI_MCA_*: scripts/netns-rsh, the hostfile, TCP on the bridge), e.g. mpirun -np 4 ...
  shape H R|off cap host H's link at rate R both ways, or lift the cap
  link H up|down  set host H's link up or down (from the bridge side, as a pulled cable)
EOF
  exit 2
}

P="${TS_NETNS_PREFIX:-ts}"
NET="${TS_NETNS_NET:-10.77.0}"
HEAD="$P-head"
STATE="/run/$P-netns"  # the UTS namespace handles and the host list

die() {
  echo "netns-cluster: error: $*" >&2
  exit 1
}

hosts() { cat "$STATE/hosts" 2>/dev/null || true; }

# Runs "$@" in namespace $1 with its hostname and /etc/hosts, in this process's place (ip netns exec and
# nsenter exec too): a signal to the script reaches the command.
exec_in_ns() {
  local ns="$1"
  shift
  exec ip netns exec "$ns" nsenter --uts="$STATE/$ns.uts" "$@"
}

down() {
  local ns
  for ns in $(hosts) "$HEAD"; do
    # What still runs there (an orted whose mpirun lost it when a link went down) goes with the host.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true  # takes its veth ends (and their peers) with it
    rm -rf "/etc/netns/$ns"
  done
  if [ -d "$STATE" ]; then
    for f in "$STATE"/*.uts; do
      [ -e "$f" ] || continue
      umount "$f" 2>/dev/null || true
    done
    rm -rf "$STATE"
  fi
}

# A UTS namespace for $1 whose hostname is $1, held by a bind mount of its handle.
make_uts() {
  touch "$STATE/$1.uts"
  unshare --uts="$STATE/$1.uts" hostname "$1"
}

# tbf's bucket for rate $1 (tc's units: N[k|m|g|t]bit, or N[k|m|g|t]bps in bytes): the bytes the rate sends in
# 250 us, at least 4 KB. A wire sends at its rate from the first byte; a bucket lets that many bytes leave at the
# veth's speed after a pause, so a fixed 32 KB bucket made a 100 Mbit/s link pass a training step's spaced 32 KiB
# activations in 1.8 ms where the wire takes 2.7 (docs/prediction.md). Smaller than 250 us of the rate, tbf stops
# reaching the rate (1 Gbit/s with 4 KB carried 240 Mbit/s here); under 4 KB, under two full frames and headers.
burst_bytes() {
  [[ "${1,,}" =~ ^([0-9]{1,9})(|k|m|g|t)(bit|bps)$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
    die "rate '$1': want N[k|m|g|t]bit or N[k|m|g|t]bps, N 1..999999999 (e.g. 100mbit)"
  local n="${BASH_REMATCH[1]}" scale
  case "${BASH_REMATCH[2]}" in
    '') scale=1 ;; k) scale=1000 ;; m) scale=1000000 ;; g) scale=1000000000 ;; t) scale=1000000000000 ;;
  esac
  [ "${BASH_REMATCH[3]}" = bps ] || scale="$scale/8"  # bytes per second
  local bytes=$((n * scale / 4000))  # 250 us
  echo $((bytes > 4096 ? bytes : 4096))
}

# Caps host $1's (its index) link at rate $2 both ways, or lifts the cap ("off"). tbf shapes what leaves an
# interface: eth0 caps what the host sends, h<I> what it receives; the queue holds 100 ms before it drops (TCP
# backs off).
shape() {
  local dev burst=
  [ "$2" = off ] || burst="$(burst_bytes "$2")"
  for dev in "$P-h$1 eth0" "$HEAD h$1"; do
    read -r ns ifname <<<"$dev"
    ip -n "$ns" link show "$ifname" >/dev/null
    tc -n "$ns" qdisc del dev "$ifname" root 2>/dev/null || true
    [ "$2" = off ] || tc -n "$ns" qdisc add dev "$ifname" root tbf rate "$2" burst "$burst" latency 100ms
  done
}

up() {
  local n="$1"
  shift
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up: N must be 1..200, not '$n'"
  local -A shape=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --shape)
        [ $# -ge 2 ] && [[ "$2" == *=* ]] || die "--shape wants HOST=RATE (e.g. $P-h4=20mbit)"
        shape["${2%%=*}"]="${2#*=}"
        shift 2
        ;;
      *) die "up: unknown argument '$1'" ;;
    esac
  done
  for h in "${!shape[@]}"; do
    [[ "$h" =~ ^$P-h([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] && [ "${BASH_REMATCH[1]}" -le "$n" ] ||
      die "--shape: no host '$h' among $P-h1..$P-h$n"
    [ "${shape[$h]}" = off ] || burst_bytes "${shape[$h]}" >/dev/null  # a bad rate: one line before the old cluster goes
  done
  down
  trap 'echo "netns-cluster: up failed: tearing down" >&2; down' ERR
  mkdir -p "$STATE"
  ip netns add "$HEAD"
  make_uts "$HEAD"
  ip -n "$HEAD" link set lo up
  # When a rank ends the job (MPI_Abort), mpirun tells every daemon, and waits for a lost host's until TCP gives
  # up on the unacknowledged message: net.ipv4.tcp_retries2 = 15 (about 15 minutes) by default, 3 (seconds) here.
  ip netns exec "$HEAD" sh -c 'echo 3 >/proc/sys/net/ipv4/tcp_retries2'  # per namespace; no procps needed
  ip -n "$HEAD" link add br0 type bridge
  ip -n "$HEAD" addr add "$NET.1/24" dev br0
  ip -n "$HEAD" link set br0 up
  local hostsfile="127.0.0.1 localhost
$NET.1 $HEAD"
  local i ns
  for i in $(seq 1 "$n"); do
    hostsfile+=$'\n'"$NET.$((10 + i)) $P-h$i"
  done
  mkdir -p "/etc/netns/$HEAD"
  printf '%s\n' "$hostsfile" >"/etc/netns/$HEAD/hosts"
  for i in $(seq 1 "$n"); do
    ns="$P-h$i"
    ip netns add "$ns"
    echo "$ns" >>"$STATE/hosts"
    make_uts "$ns"
    mkdir -p "/etc/netns/$ns"
    printf '%s\n' "$hostsfile" >"/etc/netns/$ns/hosts"
    # The bridge side is named for the host (h<I>) in the head namespace; the host side is eth0.
    ip link add "h$i" netns "$HEAD" type veth peer name eth0 netns "$ns"
    ip -n "$HEAD" link set "h$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$NET.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    [ -z "${shape[$ns]:-}" ] || shape "$i" "${shape[$ns]}"
  done
  sed 's/$/ slots=1/' "$STATE/hosts" >"$STATE/hostfile"
  trap - ERR
  for i in $(seq 1 "$n"); do
    reachable "$i" || {
      down
      die "host $P-h$i does not answer on $NET.$((10 + i)): cluster torn down"
    }
  done
  echo "netns-cluster: $n host(s) $P-h1..$P-h$n on $NET.0/24, launcher $HEAD ($NET.1)${shape[*]:+, shaped: ${!shape[*]}}" >&2
}

# Whether host I answers the launcher, waiting up to 5 s (a new or re-raised link may take a moment to carry
# traffic): a TCP connection to a closed port is refused at once by a reachable host (no ping needed:
# iputils-ping may be missing). Every host answers before anyone starts MPI on them.
reachable() {
  local try
  for try in $(seq 1 10); do
    [[ "$(ip netns exec "$HEAD" timeout 2 bash -c "</dev/tcp/$NET.$((10 + $1))/9" 2>&1)" == *refused* ]] && return 0
    sleep 0.5
  done
  return 1
}

host_index() {
  [[ "$1" =~ ^$P-h([0-9]+)$ ]] && grep -qx "$1" "$STATE/hosts" 2>/dev/null || die "no host '$1' (hosts: $(hosts | tr '\n' ' '))"
  echo "${BASH_REMATCH[1]}"
}

[ $# -ge 1 ] || usage
cmd="$1"
shift
case "$cmd" in
  up)
    [ $# -ge 1 ] || usage
    [ "$(id -u)" = 0 ] || die "up needs root (ip netns add)"
    up "$@"
    ;;
  down) down ;;
  hostfile)
    slots="${1:-1}"
    [ -s "$STATE/hosts" ] || die "no cluster: run '$0 up N' first"
    hosts | sed "s/\$/ slots=$slots/"
    ;;
  exec)
    [ $# -ge 2 ] || usage
    h="$1"
    shift
    [ "$h" = "$HEAD" ] || host_index "$h" >/dev/null
    exec_in_ns "$h" "$@"
    ;;
  launch)
    [ $# -ge 1 ] || usage
    [ -e "$STATE/$HEAD.uts" ] || die "no cluster: run '$0 up N' first"
    # Open MPI's settings for the cluster, as environment (so that commands which start mpirun themselves,
    # `scale` and `collectives --transports`, inherit them): the rsh agent, the hosts, TCP only on the
    # bridge's subnet, and ranks that yield when idle (many hosts share few cores). A value already set wins.
    export TS_NETNS_PREFIX="$P"
    export OMPI_MCA_plm_rsh_agent="${OMPI_MCA_plm_rsh_agent:-$(cd "$(dirname "$0")" && pwd)/netns-rsh}"
    export OMPI_MCA_orte_default_hostfile="${OMPI_MCA_orte_default_hostfile:-$STATE/hostfile}"
    export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-$NET.0/24}"
    export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-$NET.0/24}"
    export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
    # Every host is this one machine: each host's daemon binds its first rank to core 0 (Open MPI's default), so
    # one rank per host put every rank on the same core, their compute one after the other (a 2-rank step of twice
    # its compute, which docs/prediction.md first read as TCP's). Unbound, the kernel spreads them over the cores.
    export OMPI_MCA_hwloc_base_binding_policy="${OMPI_MCA_hwloc_base_binding_policy:-none}"
    # For the same reason one compute thread per rank unless the user chose (TRAINSCOPE_THREADS, OMP_NUM_THREADS):
    # trainscope's default, the cores over the ranks of the rank's host, gives every 1-rank host all the machine's
    # cores, and the hosts' threads then outnumber them (a 2-rank tiny mlp computed 21.7 ms per step against 0.17).
    [ -n "${TRAINSCOPE_THREADS:-}${OMP_NUM_THREADS:-}" ] || export OMP_NUM_THREADS=1
    # mpirun notices a lost host's daemon through TCP keepalives on its idle connection: by default up to
    # 300 + 9 x 20 s after the loss (Open MPI's defaults); here within 3 to 13 s (a probe every 10 s of idleness, counted from the launch,
    # then 3 unanswered 1 s apart), soon enough to end a job in seconds. A test that needs trainscope's own line
    # first raises the interval (tests/integration/test_netns_cluster.py).
    export OMPI_MCA_oob_tcp_keepalive_time="${OMPI_MCA_oob_tcp_keepalive_time:-10}"
    export OMPI_MCA_oob_tcp_keepalive_intvl="${OMPI_MCA_oob_tcp_keepalive_intvl:-1}"
    export OMPI_MCA_oob_tcp_keepalive_probes="${OMPI_MCA_oob_tcp_keepalive_probes:-3}"
    exec_in_ns "$HEAD" "$@"
    ;;
  shape)
    [ $# -eq 2 ] || usage
    i="$(host_index "$1")"
    shape "$i" "$2"
    ;;
  link)
    [ $# -eq 2 ] && { [ "$2" = up ] || [ "$2" = down ]; } || usage
    i="$(host_index "$1")"
    ip -n "$HEAD" link set "h$i" "$2"
    # A raised link carries traffic before this returns: the next mpirun's daemon on it must reach the launcher.
    [ "$2" = down ] || reachable "$i" || die "host $1 does not answer on $NET.$((10 + i)) after its link came up"
    ;;
  status)
    hosts
    ;;
  -h | --help) usage ;;
  *) usage ;;
esac
