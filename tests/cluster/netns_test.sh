#!/usr/bin/env bash
# pulse across hosts, emulated with network namespaces: the switch, two
# memory nodes and a CPU node each get a namespace of their own with one
# address on a private bridge (10.200.0.0/24, inside a hub namespace, so the
# host's own network is never touched), and talk over UCX's TCP transport.
# The CPU node runs `pulse bench traverse --switch`, which checks every
# traversal's answer and counts the continuations: under direct routing
# (the default) the memory nodes send them to each other across the
# namespaces, under PULSE_ROUTING=switch the switch forwards them.
# Exit 77 (skipped) when namespaces cannot be created, unless
# PULSE_REQUIRE_NETNS=1 (CI, which runs as root: .ci/run): then that fails.
set -uo pipefail
PULSE="$1"
TAG="p$$"                 # names: at most 15 characters for interfaces
HUB="${TAG}hub"
NODES=(sw m0 m1 cpu)
declare -A ADDR=([sw]=10.200.0.1 [m0]=10.200.0.2 [m1]=10.200.0.3 [cpu]=10.200.0.4)
WORK="$(mktemp -d /tmp/pulse-netns-test.XXXXXX)"
PIDS=()
# Every node and the CPU node prove one cluster secret (the nodes refuse to
# start without one); one file stands for the copy each host would get.
(umask 077 && head -c 32 /dev/urandom >"$WORK/secret.key")
export PULSE_CLUSTER_SECRET_FILE="$WORK/secret.key"

skip() {
  rm -rf "$WORK"
  if [[ ${PULSE_REQUIRE_NETNS:-0} == 1 ]]; then echo "FAIL (PULSE_REQUIRE_NETNS=1): $*" >&2; exit 1; fi
  echo "SKIPPED: $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "network namespaces need root (uid is $(id -u))"
command -v ip >/dev/null || skip "the ip command (iproute2) is not installed"
ip netns add "$HUB" 2>"$WORK/netns.err" || skip "cannot create a network namespace: $(cat "$WORK/netns.err")"

# Every process this test starts runs inside one of its namespaces, so
# `ip netns pids` finds them all (also ones whose pid was never recorded).
ns_pids() { for n in "${NODES[@]}"; do ip netns pids "$TAG$n" 2>/dev/null; done; }
cleanup() {
  local pids
  pids="$(ns_pids) ${PIDS[*]}"
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for pid in $pids; do
      [[ -r /proc/$pid/stat && $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] && alive=1
    done
    [[ $alive -eq 0 ]] && break
    sleep 0.1
  done
  for pid in $(ns_pids) ${PIDS[*]}; do kill -KILL "$pid" 2>/dev/null; done
  for n in "${NODES[@]}"; do ip netns del "$TAG$n" 2>/dev/null; done
  ip netns del "$HUB" 2>/dev/null
  rm -f /dev/shm/pulse-"$TAG"-*
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done >&2
  exit 1
}
inns() { local ns="$1"; shift; ip netns exec "$TAG$ns" env UCX_TLS=tcp "$@"; }
# Starts a node in the background; `ip netns exec` and `env` exec, so $! is the node's pid.
start_in() {
  local ns="$1" log="$2"; shift 2
  ip netns exec "$TAG$ns" env UCX_TLS=tcp "$@" >"$log" 2>&1 &
  PIDS+=($!)
}

ip -n "$HUB" link add br0 type bridge || fail "cannot create a bridge"
ip -n "$HUB" link set br0 up
for n in "${NODES[@]}"; do
  ip netns add "$TAG$n" || fail "netns $TAG$n"
  ip link add "$TAG$n" type veth peer name eth0 netns "$TAG$n" || fail "veth for $n"
  ip link set "$TAG$n" netns "$HUB"
  ip -n "$HUB" link set "$TAG$n" master br0 up
  ip -n "$TAG$n" addr add "${ADDR[$n]}/24" dev eth0
  ip -n "$TAG$n" link set eth0 up
  ip -n "$TAG$n" link set lo up
done

start_in sw "$WORK/switch.log" "$PULSE" switch --listen "${ADDR[sw]}:7100" --poll-window-us 0
for i in 0 1; do
  start_in "m$i" "$WORK/memnode-$i.log" "$PULSE" memnode --node "$i" --listen "${ADDR[m$i]}:7101" \
    --switch "${ADDR[sw]}:7100" --pool-mib 32 --shm-name "/pulse-$TAG-$i" --poll-window-us 0
done
# Both memory nodes registered?  The switch logs each registration.
for _ in $(seq 150); do
  [[ $(grep -c "serves far" "$WORK/switch.log" 2>/dev/null) -ge 2 ]] && break
  for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || fail "a node process exited while starting"; done
  sleep 0.1
done
[[ $(grep -c "serves far" "$WORK/switch.log") -ge 2 ]] || fail "the memory nodes did not register with the switch"

inns cpu "$PULSE" bench traverse --switch "${ADDR[sw]}:7100" --json --samples 200 --rounds 2 --warmup 10 \
  --poll-window-us 0 >"$WORK/bench.json" 2>"$WORK/bench.log" || fail "bench traverse across namespaces"
B="$WORK/bench.json"
num() { sed -n "s/^  \"$1\": \([0-9.e+-]*\),*\$/\1/p" "$B"; }
VERIFIED=$(num verified_traversals)
FORWARDS=$(num continuations)
SWITCHED=$(num switch_forwards)
EXPECTED=$(num expected_continuations)
[[ -n $VERIFIED && $VERIFIED -ge 600 ]] || fail "bench: $VERIFIED traversals verified: $(cat "$B")"
[[ -n $FORWARDS && $FORWARDS -gt 0 && $FORWARDS -eq $EXPECTED ]] ||
  fail "bench: $FORWARDS continuations between the memory nodes, expected $EXPECTED"
# Direct routing (the default): the memory nodes sent them to each other
# across the namespaces, none went through the switch.
if [[ ${PULSE_ROUTING:-direct} == direct ]]; then
  [[ $SWITCHED -eq 0 ]] || fail "bench: the switch forwarded $SWITCHED continuations under direct routing"
else
  [[ $SWITCHED -eq $EXPECTED ]] || fail "bench: the switch forwarded $SWITCHED continuations, expected $EXPECTED"
fi
grep -q '^  "ucx_tls": "tcp"' "$B" || fail "bench: the client did not use UCX_TLS=tcp"
echo "across namespaces over tcp: raw_rtt $(num raw_rtt_us) us, offload_rtt $(num offload_rtt_us) us," \
  "pulse $(num pulse_us) us, pulse-acc $(num pulse_acc_us) us; $VERIFIED traversals verified," \
  "$FORWARDS continuations between memory nodes ($SWITCHED through the switch)"
# The memory nodes served requests from the CPU node's namespace.
grep -q "10.200.0.2:7101" "$WORK/switch.log" || fail "memory node 0 did not register with its namespace address"
# A clean stop: SIGTERM ends every node with status 0.
for pid in "${PIDS[@]}"; do kill -TERM "$pid"; done
for pid in "${PIDS[@]}"; do
  wait "$pid" || fail "node process $pid exited with status $? after SIGTERM"
done
[[ -z $(ns_pids) ]] || fail "processes left in the namespaces: $(ns_pids)"
PIDS=()
echo "PASS"
