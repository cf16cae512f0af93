#!/usr/bin/env bash
# The main job: start the embedded local cluster (one switch and four memory
# nodes, config/local.toml), build a hash table in far memory and run
# offloaded lookups against it (`pulse demo`), show the nodes' counters, and
# stop the cluster -- always, also on failure or Ctrl-C.
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
cd "$(dirname "$0")/.."
PULSE="$BUILD_DIR/bin/pulse"

if "$PULSE" cluster status >/dev/null 2>&1; then
  echo "demo: a local cluster is already running (pulse cluster status); stop it with: $PULSE cluster down" >&2
  exit 1
fi
# Set before `up`: if it is interrupted, `down` still finds its state file.
trap '"$PULSE" cluster down >/dev/null || true' EXIT
"$PULSE" cluster up
echo
"$PULSE" demo --seconds 3
echo
"$PULSE" cluster status
