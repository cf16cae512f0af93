// Replays every fuzz target's seed corpus (fuzz/corpus/<target>/) and every
// input a fuzzer ever crashed on (fuzz/regressions/<target>/) through the
// same target function the fuzzer runs, in the normal test build.  A failed
// check aborts with its message (like under libFuzzer); the file being
// replayed is printed first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <vector>

#include "fuzz_check.h"

namespace pulse::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> InputsOf(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// Names the target in test listings (found by argument-dependent lookup).
void PrintTo(const Target& t, std::ostream* os) { *os << t.name; }

namespace {

class FuzzReplay : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzReplay, CorpusAndRegressionsPass) {
  const Target& target = GetParam();
  const fs::path root = PULSE_FUZZ_DIR;
  std::vector<fs::path> inputs = InputsOf(root / "corpus" / target.name);
  EXPECT_FALSE(inputs.empty()) << "no seed corpus for " << target.name;
  for (const fs::path& p : InputsOf(root / "regressions" / target.name)) inputs.push_back(p);
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::fprintf(stderr, "replaying %s\n", p.c_str());
    target.run(bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(Targets().begin(), Targets().end()),
                         [](const ::testing::TestParamInfo<Target>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace pulse::fuzz
