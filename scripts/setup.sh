#!/usr/bin/env bash
# Installs every system dependency pulse needs from Debian packages.
# Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  ccache                             # rebuilds, and a fresh clone's build, reuse earlier compiles
  clang llvm libclang-rt-14-dev      # iterator compiler (BPF backend), llvm-objdump, sanitizers/fuzzers
  libelf-dev                         # reading the BPF objects clang writes
  libucx-dev ucx-utils               # the fabric: every byte between nodes
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev libzstd-dev libxxhash-dev
  libxbyak-dev                       # the engine's JIT (x86-64 code generator, header-only)
  iproute2 procps
  python3 python3-matplotlib         # plots of `pulse bench suite` (scripts/plot_suite.py)
  python3-networkx                   # the graph applications checked against networkx (tests/graph/networkx_test.py)
  redis-server redis-tools python3-redis  # `pulse kv serve` tests and `pulse bench resp`: real Redis clients
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
