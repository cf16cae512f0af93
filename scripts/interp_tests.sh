#!/usr/bin/env bash
# The data-structure and application tests once more with the memory nodes on
# the reference interpreter instead of the JIT (`pulse memnode` reads
# PULSE_ENGINE when --engine is not given), at a quarter of their operations:
# the JIT is the default everywhere else, so this keeps the interpreter, the
# fallback, exercised end to end (dlrm_test: the embedding reduction of issue
# 15 against its reference, at its own scale).  Run by .ci/run after `make test`.
#
#   scripts/interp_tests.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
t0=$(date +%s)
for t in ds_test ds_lock_test ds_tree_test ds_lists_test ds_btree_repair_test apps_test dlrm_test; do
  echo "interp_tests.sh: $t"
  PULSE_ENGINE=interp PULSE_TEST_SCALE=0.25 "$build/bin/$t" --gtest_brief=1
done
echo "interp_tests.sh: took $(( $(date +%s) - t0 )) s"
