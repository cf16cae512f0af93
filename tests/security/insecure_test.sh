#!/usr/bin/env bash
# No open node by accident (docs/security.md): `pulse switch`, `pulse
# memnode` and `pulse agent` without a cluster secret refuse to start (exit
# non-zero, naming the ways to give one and --insecure); with --insecure a switch
# and a memory node start, warn once, and `pulse cluster status` reports them as insecure; with
# --secret-file they start without the warning.
set -uo pipefail
PULSE="$(realpath "$1")"
WORK="$(mktemp -d /tmp/pulse-insecure-test.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
unset PULSE_CLUSTER_SECRET_FILE
source "$(dirname "$0")/../support/refusal.sh"

# wait_for_file FILE: true once FILE is non-empty, false after 60 s.
wait_for_file() {
  local deadline=$((SECONDS + 60))
  until [[ -s "$1" ]]; do
    (( SECONDS < deadline )) || return 1
    sleep 0.1
  done
}

NO_SECRET="no cluster secret: pass --secret-file FILE, set \$PULSE_CLUSTER_SECRET_FILE, or name it in [cluster] secret_file"
expect_refusal "$NO_SECRET" "$PULSE" switch --listen 127.0.0.1:0
expect_refusal "--insecure runs the node open" "$PULSE" switch --listen 127.0.0.1:0
expect_refusal "$NO_SECRET" "$PULSE" memnode --node 0 --pool-mib 8 --switch 127.0.0.1:1
expect_refusal "$NO_SECRET" "$PULSE" agent --listen 127.0.0.1:0 --switch 127.0.0.1:1
# A secret file others may read is refused, naming where it came from.
mkdir "$WORK/keys"  # not $WORK itself: the status tool below looks for a secret next to its state file
(umask 077 && head -c 32 /dev/urandom >"$WORK/keys/secret.key")
cp "$WORK/keys/secret.key" "$WORK/loose.key" && chmod 644 "$WORK/loose.key"
expect_refusal "cluster secret (--secret-file)" "$PULSE" switch --listen 127.0.0.1:0 --secret-file "$WORK/loose.key"
expect_refusal "cluster secret (\$PULSE_CLUSTER_SECRET_FILE)" \
  env PULSE_CLUSTER_SECRET_FILE="$WORK/loose.key" "$PULSE" switch --listen 127.0.0.1:0

# --insecure: both start, the memory node registers with the switch.
"$PULSE" switch --insecure --listen 127.0.0.1:0 --port-file "$WORK/sw.port" >"$WORK/sw.log" 2>&1 &
PIDS+=($!)
wait_for_file "$WORK/sw.port" || fail "the --insecure switch did not start: $(cat "$WORK/sw.log")"
SWITCH="127.0.0.1:$(cat "$WORK/sw.port")"
"$PULSE" memnode --insecure --node 0 --pool-mib 8 --switch "$SWITCH" --no-calibrate --fresh-pool \
  --shm-name "/pulse-insecure-test-$$" --port-file "$WORK/m0.port" >"$WORK/m0.log" 2>&1 &
PIDS+=($!)
wait_for_file "$WORK/m0.port" || fail "the --insecure memory node did not start: $(cat "$WORK/m0.log")"
for log in sw m0; do
  n="$(grep -c -- "--insecure and no cluster secret" "$WORK/$log.log")"
  [[ "$n" == 1 ]] || fail "$log: $n warning lines, expected 1: $(cat "$WORK/$log.log")"
done

# `pulse cluster status` of these two (a state file as `up` writes it; no
# secret next to it, so the tool connects without credentials) reports both
# as insecure, and --check fails on it.
SW_PID="${PIDS[0]}"
M0_PID="${PIDS[1]}"
cat >"$WORK/state.json" <<JSON
{"name": "insecure-test", "switch_address": "$SWITCH",
 "nodes": [{"name": "switch", "role": "switch", "address": "$SWITCH", "pid": $SW_PID},
           {"name": "memnode-0", "role": "memnode", "node": 0, "address": "127.0.0.1:$(cat "$WORK/m0.port")",
            "pid": $M0_PID}]}
JSON
STATUS="$("$PULSE" cluster status --state "$WORK/state.json" 2>&1)"
for n in switch memnode-0; do
  [[ "$STATUS" == *"problem: $n: insecure"* ]] || fail "status does not report $n as insecure: $STATUS"
done
"$PULSE" cluster status --check --state "$WORK/state.json" >/dev/null 2>&1 && fail "status --check passes insecure nodes"

# --secret-file: a node that has the secret starts without the warning.
"$PULSE" switch --secret-file "$WORK/keys/secret.key" --listen 127.0.0.1:0 --port-file "$WORK/sw2.port" \
  >"$WORK/sw2.log" 2>&1 &
PIDS+=($!)
wait_for_file "$WORK/sw2.port" || fail "the switch with --secret-file did not start: $(cat "$WORK/sw2.log")"
grep -q -- "--insecure" "$WORK/sw2.log" && fail "the switch with a secret warns: $(cat "$WORK/sw2.log")"

# SIGTERM stops each cleanly.
for p in "${PIDS[@]}"; do
  kill -TERM "$p"
  wait "$p"
  status=$?
  [[ $status == 0 ]] || fail "pid $p exited $status after SIGTERM"
done
PIDS=()
[[ $FAILED == 0 ]] && echo "PASS"
exit $FAILED
