#!/usr/bin/env bash
# Makes the benchmark graphs of `pulse bench graph` (generated, never
# committed) with fixed seeds, symmetric, in pulse's binary CSR form:
#   rmat-<S>.bin     R-MAT / Graph500 Kronecker (a=0.57, b=c=0.19), 2^S vertices, edge factor 16
#   uniform-<S>.bin  uniform random, 2^S vertices, 16 * 2^S edges drawn
# The paper's graphs (friendster, sk-2005, moliere, twitter) are not
# reachable here; these synthetic ones stand in for them, labelled by name.
#
#   scripts/graphs.sh [--out DIR] [--scales "18 20 22"] [--pulse PATH]
set -euo pipefail

out=build/graphs  # under build/: ignored by git
scales="18 20 22"
pulse=build/bin/pulse
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --scales) scales="$2"; shift 2 ;;
    --pulse) pulse="$2"; shift 2 ;;
    *) echo "graphs.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

mkdir -p "$out"
for s in $scales; do
  if [ ! -s "$out/rmat-$s.bin" ]; then
    "$pulse" graph gen --kind rmat --scale "$s" --edge-factor 16 --seed 1 --symmetrize --out "$out/rmat-$s.bin"
  fi
  if [ ! -s "$out/uniform-$s.bin" ]; then
    "$pulse" graph gen --kind uniform --n $((1 << s)) --edges $((16 << s)) --seed 1 --symmetrize --out "$out/uniform-$s.bin"
  fi
done
ls -l "$out"
