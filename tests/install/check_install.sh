#!/usr/bin/env bash
# Installs the built tree into a temporary prefix and builds a user program
# against it with find_package(pulse): the install is what users get.
set -euo pipefail
BUILD_DIR="$1"; SOURCE_DIR="$2"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD_DIR" --prefix "$WORK/prefix" >/dev/null
cmake -S "$SOURCE_DIR/consumer" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" >/dev/null
cmake --build "$WORK/build" >/dev/null
"$WORK/build/consumer"
