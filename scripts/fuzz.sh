#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (-fsanitize=fuzzer,address,
# undefined) in a sanitizer build directory and runs each one for a bounded
# time from its seed corpus (fuzz/corpus/<target>/) plus its past crash inputs
# (fuzz/regressions/<target>/).  Fails on the first crash, leak, sanitizer
# report or failed check; the input that did it is left in the work directory
# (printed) -- copy it to fuzz/regressions/<target>/ once the bug is fixed.
#
#   scripts/fuzz.sh [--seconds N] [--build-dir DIR] [--jobs N] [target...]
#
# Defaults: 45 seconds per target, build-asan/ (the build scripts/sanitize.sh
# uses too: clang, ASan+UBSan, fuzzers), every target.  --jobs N (default:
# the CPU count) is both the build's parallelism and how many fuzzers run at
# once, each on one core, so N cores fuzz every target for its full time in
# about 1/N of the wall time.  New inputs the
# fuzzers find go to the work directory (<build dir>/fuzz-work/), never into
# the repository's corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${PULSE_FUZZ_SECONDS:-45}
build_dir=build-asan
jobs=$(nproc)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=(assembler program memnode_message switch_message batch_envelope elf jit rpc_message control handshake)
fi

source scripts/sanitized_build.sh
start=$(date +%s)
configure_sanitized_build "$build_dir" address,undefined
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]/#/fuzz_}"
echo "fuzz.sh: build took $(( $(date +%s) - start )) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# UCX's own memory pools look like leaks to LeakSanitizer (see the file).
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/fuzz/lsan_suppressions.txt}
work="$build_dir/fuzz-work"
# Runs one target for its time; its exit status is the fuzzer's.
fuzz_one() {
  local t=$1
  mkdir -p "$work/$t/new" "$work/$t/artifacts"
  local dirs=("$work/$t/new" "fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && dirs+=("fuzz/regressions/$t")
  echo "fuzz.sh: $t for ${seconds} s"
  local t0
  t0=$(date +%s)
  if ! "$build_dir/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/$t/artifacts/" "${dirs[@]}" \
      >"$work/$t/log" 2>&1; then
    echo "fuzz.sh: $t FAILED; log $work/$t/log, input in $work/$t/artifacts/:" >&2
    ls "$work/$t/artifacts/" >&2
    tail -40 "$work/$t/log" >&2
    return 1
  fi
  local execs
  execs=$(grep -m1 'stat::number_of_executed_units' "$work/$t/log" | awk '{print $2}')
  echo "fuzz.sh: $t ok: ${execs:-?} runs in $(( $(date +%s) - t0 )) s"
}

status=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
echo "fuzz.sh: total $(( $(date +%s) - start )) s"
exit $status
