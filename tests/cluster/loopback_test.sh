#!/usr/bin/env bash
# `pulse cluster up | status | down` on loopback with a temporary config:
# the nodes come up and answer, a second `up` is refused, `down` leaves no
# process behind and is idempotent, and a bad config names its key.
set -euo pipefail
PULSE="$1"
WORK="$(mktemp -d /tmp/pulse-cluster-test.XXXXXX)"
CONFIG="$WORK/cluster.toml"
unset PULSE_RUN_DIR
cleanup() {
  "$PULSE" cluster down --config "$CONFIG" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$CONFIG" <<TOML
[cluster]
name = "ctest"
run_dir = "$WORK/run"
start_timeout_ms = 30000
stop_timeout_ms = 3000
[poll]
window_us = 0
[switch]
port = 0
[[memnode]]
port = 0
pool_mib = 16
[[memnode]]
port = 0
pool_mib = 16
TOML

"$PULSE" cluster up --config "$CONFIG" || fail "cluster up"
STATE="$WORK/run/ctest/state.json"
[[ -f "$STATE" ]] || fail "no state file at $STATE"
PIDS=$(sed -n 's/^ *"pid": \([0-9]*\),*$/\1/p' "$STATE" | tr '\n' ' ')
echo "node pids: $PIDS"
[[ $(wc -w <<<"$PIDS") -eq 3 ]] || fail "expected 3 node processes, state has: $PIDS"
# Port 0 in the config: each node bound a port itself and the state has it.
! grep -q '"address": "[^"]*:0"' "$STATE" || fail "a node's port was never learned: $(cat "$STATE")"
[[ $(grep -c '"address": "127.0.0.1:[1-9][0-9]*"' "$STATE") -eq 3 ]] || fail "state lacks the nodes' ports: $(cat "$STATE")"
[[ $(ls "$WORK/run/ctest/"*.port | wc -l) -eq 3 ]] || fail "expected a port file per node in $WORK/run/ctest"
# The cluster secret and the default tenant's credential: 32 bytes each, owner-only.
for key in secret.key tenant-1.key; do
  [[ -f "$WORK/run/ctest/$key" ]] || fail "up wrote no $key"
  [[ $(stat -c %a "$WORK/run/ctest/$key") == 600 && $(stat -c %s "$WORK/run/ctest/$key") == 32 ]] ||
    fail "$key: $(stat -c '%a %s' "$WORK/run/ctest/$key"), expected mode 600 and 32 bytes"
done

"$PULSE" cluster status --config "$CONFIG" --json >"$WORK/status.json" || fail "status --json exit $?"
S="$WORK/status.json"
count() { grep -c -- "$1" "$S" || true; }
grep -q '^  "healthy": true' "$S" || fail "status --json: not healthy: $(cat "$S")"
[[ $(count '"answering": true') -eq 3 && $(count '"alive": false') -eq 0 ]] || fail "status --json: nodes not all alive"
[[ $(count '"role": "memnode"') -eq 2 && $(count '"role": "switch"') -eq 1 ]] || fail "status --json: roles"
for key in requests iterations forwards bytes_in bytes_out engine_active engine_capacity; do
  grep -q "\"$key\": [0-9]" "$S" || fail "status --json: no counter $key"
done
grep -q '"memnodes_alive": 2' "$S" || fail "status --json: the switch does not see both memory nodes"
echo "status --json ok"
"$PULSE" cluster status --config "$CONFIG" | grep -q "memnode-1" || fail "status table"

# The main job's client (`make demo`): it must present the cluster's secret,
# taken from the config, and every lookup must find its value.
SWITCH=$(sed -n 's/^ *"switch_address": "\([^"]*\)",*$/\1/p' "$STATE")
[[ -n "$SWITCH" ]] || fail "no switch_address in $(cat "$STATE")"
"$PULSE" demo --config "$CONFIG" --switch "$SWITCH" --keys 2000 --buckets 512 --seconds 0.1 --json >"$WORK/demo.json" ||
  fail "pulse demo against the cluster: exit $?"
echo "demo ok"

if "$PULSE" cluster up --config "$CONFIG" 2>"$WORK/second_up.txt"; then fail "a second up was accepted"; fi
grep -q "already running" "$WORK/second_up.txt" || fail "second up: $(cat "$WORK/second_up.txt")"

"$PULSE" cluster down --config "$CONFIG" || fail "cluster down"
for pid in $PIDS; do
  # Gone, or a zombie waiting for its new parent to reap it.
  if [[ -r /proc/$pid/stat ]] && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; then
    fail "process $pid still runs after down"
  fi
done
[[ ! -f "$STATE" ]] || fail "state file left behind"
"$PULSE" cluster down --config "$CONFIG" | grep -q "no cluster is running" || fail "second down"
if "$PULSE" cluster status --config "$CONFIG" >/dev/null; then fail "status of a stopped cluster exits 0"; fi

printf '[[memnode]]\nport = "x"\n' >"$WORK/bad.toml"
if "$PULSE" cluster up --config "$WORK/bad.toml" 2>"$WORK/bad.txt"; then fail "bad config accepted"; fi
grep -q "memnode\[0\].port: expected an integer" "$WORK/bad.txt" || fail "bad config message: $(cat "$WORK/bad.txt")"
echo "PASS"
