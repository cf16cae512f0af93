#!/usr/bin/env bash
# Installs the built tree into a fresh temporary prefix and builds a user
# project against it with find_package(pulse): the install is what users get.
# The project (consumer/) defines its own structure and iterator, embeds the
# iterator with the installed pulse_add_iterator and pulse_iterc, and runs it.
# The package must not ask for the applications' libraries.
set -euo pipefail
BUILD_DIR="$1"; SOURCE_DIR="$2"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD_DIR" --prefix "$WORK/prefix" >/dev/null
PKG="$(dirname "$(find "$WORK/prefix" -name pulseConfig.cmake)")"
if grep -il 'crypto\|zstd' "$PKG"/*.cmake; then
  echo "the installed package mentions libcrypto or zstd (above)" >&2
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
"$WORK/build/consumer"
