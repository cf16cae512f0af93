#include "ds/ops_tally.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

namespace pulse::ds::testing {
namespace {

struct Tally {
  std::mutex mu;
  std::map<std::string, uint64_t> by_suite;
};
Tally& TheTally() {
  static Tally t;
  return t;
}

class PrintTally : public ::testing::Environment {
 public:
  void SetUp() override { start_ = std::chrono::steady_clock::now(); }
  void TearDown() override {
    Tally& t = TheTally();
    std::lock_guard<std::mutex> lock(t.mu);
    uint64_t total = 0;
    for (const auto& [suite, n] : t.by_suite) {
      std::printf("[ds ops] %-28s %10llu\n", suite.c_str(), static_cast<unsigned long long>(n));
      total += n;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::printf("[ds ops] %-28s %10llu  in %.1f s\n", "total", static_cast<unsigned long long>(total), secs);
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

[[maybe_unused]] ::testing::Environment* const kPrintTally = ::testing::AddGlobalTestEnvironment(new PrintTally);

}  // namespace

void TallyOps(std::string_view suite, uint64_t n) {
  Tally& t = TheTally();
  std::lock_guard<std::mutex> lock(t.mu);
  t.by_suite[std::string(suite)] += n;
}

}  // namespace pulse::ds::testing
