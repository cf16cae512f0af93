#!/usr/bin/env bash
# Installs the built tree into a fresh temporary prefix and builds a user
# project against it with find_package(pulse): the install is what users get.
# The project (consumer/) defines its own structure and iterator, embeds the
# iterator with the installed pulse_add_iterator and pulse_iterc, and runs it
# on the interpreter and, through RunTypedTraversal, on a local cluster (a
# switch and one memory node started from the installed `pulse`).  The
# package must not ask for the applications' libraries.
set -euo pipefail
BUILD_DIR="$1"; SOURCE_DIR="$2"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
# The port a node wrote to its --port-file, waiting at most 60 s.
port_of() {
  for _ in $(seq 600); do
    if [ -s "$1" ]; then cat "$1"; return 0; fi
    sleep 0.1
  done
  echo "no port in $1 after 60 s" >&2
  return 1
}
cmake --install "$BUILD_DIR" --prefix "$WORK/prefix" >/dev/null
PKG="$(dirname "$(find "$WORK/prefix" -name pulseConfig.cmake)")"
# libcrypto is the net layer's (the connection handshake's HMAC); zstd is
# only the applications', which are not installed.
if grep -n 'libzstd\|ZSTD' "$PKG"/*.cmake | grep -v ':[0-9]*:#'; then
  echo "the installed package mentions zstd (above)" >&2
  exit 1
fi
for lib in core compiler net client; do
  test -f "$(dirname "$(dirname "$PKG")")/libpulse_$lib.a" || { echo "libpulse_$lib.a not installed" >&2; exit 1; }
done
if ls "$(dirname "$(dirname "$PKG")")" | grep -q 'libpulse_\(bench\|apps\|rpc\|server\|cluster\)'; then
  echo "a harness or server layer was installed" >&2
  exit 1
fi
if ! { cmake -S "$SOURCE_DIR/consumer" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" &&
        cmake --build "$WORK/build"; } >"$WORK/consumer.log" 2>&1; then
  cat "$WORK/consumer.log" >&2
  exit 1
fi
PULSE="$WORK/prefix/bin/pulse"
# The nodes refuse to start without a cluster secret; the consumer (a client
# without a tenant credential) derives its tenant's key from the same file.
(umask 077 && head -c 32 /dev/urandom >"$WORK/secret.key")
export PULSE_CLUSTER_SECRET_FILE="$WORK/secret.key"
"$PULSE" switch --listen 127.0.0.1:0 --port-file "$WORK/switch.port" --log-level warn &
PIDS+=($!)
SWITCH="127.0.0.1:$(port_of "$WORK/switch.port")"
"$PULSE" memnode --node 0 --switch "$SWITCH" --pool-mib 16 --no-calibrate --fresh-pool \
  --shm-name "/pulse-install-test-$$" --port-file "$WORK/memnode.port" --log-level warn &
PIDS+=($!)
port_of "$WORK/memnode.port" >/dev/null
PULSE_CLUSTER="$SWITCH" "$WORK/build/consumer"
