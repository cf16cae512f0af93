#!/usr/bin/env bash
# Regenerates the fuzz targets' seed corpora (fuzz/corpus/<target>/) from
# real inputs (see fuzz/make_corpus.cc).  Inputs that crashed a fuzzer live
# in fuzz/regressions/<target>/ and are never touched here.
#   scripts/fuzz_corpus.sh [BUILD_DIR]   (default build/, configured already)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
cmake --build "$build_dir" --target pulse_fuzz_corpus
rm -rf fuzz/corpus
"$build_dir/bin/pulse_fuzz_corpus" fuzz/corpus
