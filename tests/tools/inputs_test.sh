#!/usr/bin/env bash
# The pulse tools against bad local inputs: a directory or a device where a
# file is expected, a file over its size limit, nonsense numeric flags, a
# benchmark that would measure nothing, clang past its time limit.  Each must
# end with exit status 1 (CLI11's own code for a flag) and a message naming
# the file, the limit or the flag; never an abort, a core dump or a read
# until memory runs out; and `pulse compile` leaves no temporary file.
set -uo pipefail
PULSE="$(realpath "$1")"
SOURCE_DIR="$(realpath "$2")"
WORK="$(mktemp -d /tmp/pulse-inputs-test.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
source "$SOURCE_DIR/tests/support/refusal.sh"

# Files that are no regular files, or too large.
mkdir "$WORK/dir"
truncate -s 20M "$WORK/huge.s"  # sparse: no disk used
mkfifo "$WORK/fifo"
for cmd in asm disasm verify; do
  expect_refusal "'$WORK/dir' is a directory, not a regular file" "$PULSE" $cmd "$WORK/dir"
  expect_refusal "'/dev/zero' is a character device" "$PULSE" $cmd /dev/zero
  expect_refusal "more than the limit of 16.0 MiB" "$PULSE" $cmd "$WORK/huge.s"
done
expect_refusal "is a pipe, not a regular file" "$PULSE" asm "$WORK/fifo"
expect_refusal "iterator source '$WORK/dir' is a directory" "$PULSE" compile "$WORK/dir"
expect_refusal "iterator source '/dev/zero' is a character device" "$PULSE" compile /dev/zero
expect_refusal "cluster config '$WORK/dir' is a directory" "$PULSE" cluster status --config "$WORK/dir"
expect_refusal "cluster config '/dev/zero' is a character device" "$PULSE" cluster up --config /dev/zero
truncate -s 2M "$WORK/huge.toml"
expect_refusal "more than the limit of 1.0 MiB" "$PULSE" cluster up --config "$WORK/huge.toml"

# Numeric flags: zero counts, non-numbers, NaN, infinities, negatives.
expect_refusal "--rounds: 0 is out of range" "$PULSE" bench engine --size-gib 0.001 --rounds 0 --seconds 0.01
expect_refusal "--seconds: expected a finite number, got 'nan'" "$PULSE" bench engine --seconds nan
expect_refusal "--seconds: expected a finite number, got 'inf'" "$PULSE" bench engine --seconds inf
expect_refusal "--workspaces: 0 is out of range" "$PULSE" bench engine --workspaces 0
expect_refusal "--sweep: 0 is out of range" "$PULSE" bench engine --sweep 16,0
expect_refusal "--workspaces: 0 is out of range" "$PULSE" bench calibrate --mib 1 --workspaces 0
expect_refusal "--rounds: expected a finite number, got 'abc'" "$PULSE" bench ds --rounds abc
expect_refusal "--lookups: 0 is out of range" "$PULSE" bench ds --lookups 0
expect_refusal "--samples: 0 is out of range" "$PULSE" bench traverse --samples 0
expect_refusal "--seconds: expected a finite number, got '-inf'" "$PULSE" bench app --seconds -inf
expect_refusal "--minutes: -1 is out of range" "$PULSE" bench soak --minutes -1
expect_refusal "--progress-every-s: 0 is out of range" "$PULSE" bench soak --progress-every-s 0
expect_refusal "--rounds: 0 is out of range" "$PULSE" bench rpc --rounds 0
expect_refusal "--clients: 0 is out of range" "$PULSE" bench resp --clients 0
expect_refusal "--workspaces: 0 is out of range" "$PULSE" memnode --node 1 --pool-mib 8 --workspaces 0
expect_refusal "--poll-window-us: expected a finite number" "$PULSE" switch --poll-window-us NaN
expect_refusal "--timeout-ms: expected a finite number, got '1e400'" "$PULSE" cluster status --timeout-ms 1e400
expect_refusal "--max-instructions: 0 is out of range" "$PULSE" verify --max-instructions 0 /dev/null

# clang past its time limit: a clear error, and no temporary file left.
if command -v clang >/dev/null 2>&1 || [[ -n "${PULSE_CLANG:-}" ]]; then
  mkdir "$WORK/tmp"
  (cd "$WORK" && TMPDIR="$WORK/tmp" PULSE_CLANG_TIMEOUT_MS=1 expect_refusal "did not finish within its time limit of 1 ms" \
    "$PULSE" compile "$SOURCE_DIR/tests/compiler/iterators/list_find.c" -o "$WORK/out.pulse")
  [[ -z "$(ls -A "$WORK/tmp")" ]] || fail "compile left temporary files: $(ls -A "$WORK/tmp")"
  [[ ! -e "$WORK/out.pulse" ]] || fail "a failed compile wrote its output"
  expect_refusal "PULSE_CLANG_TIMEOUT_MS='soon' must be an integer" \
    env PULSE_CLANG_TIMEOUT_MS=soon "$PULSE" compile "$SOURCE_DIR/tests/compiler/iterators/list_find.c" -o "$WORK/out.pulse"
  # The same source within the default limits compiles, and leaves nothing behind either.
  (cd "$WORK" && TMPDIR="$WORK/tmp" "$PULSE" compile -q "$SOURCE_DIR/tests/compiler/iterators/list_find.c" -o "$WORK/ok.pulse") ||
    fail "compile within the limits failed"
  [[ -s "$WORK/ok.pulse" ]] || fail "compile wrote no program"
  [[ -z "$(ls -A "$WORK/tmp")" ]] || fail "a successful compile left temporary files: $(ls -A "$WORK/tmp")"
else
  echo "clang not found: the compile limit checks are skipped"
fi

[[ $FAILED -eq 0 ]] && echo PASS
exit $FAILED
