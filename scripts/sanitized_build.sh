# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: configures the one clang
# build both use, so CI compiles the sanitized code base once.
#   configure_sanitized_build DIR SANITIZERS [extra cmake args...]
# DIR gets clang, -fsanitize=SANITIZERS, -g1 (line tables for reports),
# the test suite and, unless SANITIZERS has "thread", the libFuzzer targets
# (-fsanitize=fuzzer-no-link coverage everywhere, fuzz/CMakeLists.txt).
# The library is built -O1 (the fuzzers and the process tests run its hot
# paths); the tests and the pulse command's files -O0, which halves their
# compile time (PULSE_DRIVER_COMPILE_OPTIONS).  Under "thread" everything is
# -O0: CI runs a few short TSan tests, so their build is the cost.  ccache,
# when installed, is the top-level CMakeLists.txt's launcher here too.
configure_sanitized_build() {
  local dir=$1 sanitizers=$2
  shift 2
  local fuzz=ON opt=-O1
  case "$sanitizers" in *thread*) fuzz=OFF opt=-O0 ;; esac
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -g1" \
    -DPULSE_DRIVER_COMPILE_OPTIONS=-O0 \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DPULSE_SANITIZE="$sanitizers" -DPULSE_FUZZ=$fuzz "$@" >/dev/null
}
