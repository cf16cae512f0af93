#!/usr/bin/env bash
# The main job.  For now: the engine benchmark on a 1 GiB list (the full
# 4 GiB run is `pulse bench engine`).
set -euo pipefail
BUILD_DIR="${1:-build}"
"$BUILD_DIR/bin/pulse" bench engine --size-gib 1 --seconds 1 --rounds 3
