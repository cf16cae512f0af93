# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: configures the one clang
# build both use, so CI compiles the sanitized code base once.
#   configure_sanitized_build DIR SANITIZERS [extra cmake args...]
# DIR gets clang, -fsanitize=SANITIZERS, -O1 -g1 (line tables for reports),
# the test suite and, unless SANITIZERS has "thread", the libFuzzer targets
# (-fsanitize=fuzzer-no-link coverage everywhere, fuzz/CMakeLists.txt).
configure_sanitized_build() {
  local dir=$1 sanitizers=$2
  shift 2
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  local fuzz=ON
  case "$sanitizers" in *thread*) fuzz=OFF ;; esac
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
    -DPULSE_SANITIZE="$sanitizers" -DPULSE_FUZZ=$fuzz "$@" >/dev/null
}
