# Sourced by the shell tests of refused commands (tests/tools/inputs_test.sh,
# tests/security/insecure_test.sh): fail() records a failure in FAILED;
# expect_refusal "<text>" <command...> checks that the command exits
# non-zero, not by a signal (status < 124), within 60 s, saying <text>.
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=1; }

expect_refusal() {
  local text="$1"; shift
  local out status
  out="$(timeout 60 "$@" 2>&1)"
  status=$?
  if [[ $status -eq 0 ]]; then fail "accepted: $* -> $out"; return; fi
  if [[ $status -ge 124 ]]; then fail "status $status (killed, aborted or timed out): $* -> $out"; return; fi
  if [[ "$out" != *"$text"* ]]; then fail "'$*' does not say '$text': $out"; return; fi
  if [[ "$out" == *"terminate called"* ]]; then fail "uncaught exception: $* -> $out"; return; fi
  echo "ok: $* -> ${out%%$'\n'*}"
}
