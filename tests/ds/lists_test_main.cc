// Prints ds_lists_test's operation total when the run ends.
#include <gtest/gtest.h>

#include <cstdio>

#include "ds/lists_test_util.h"

namespace {

class OpsReport : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("ds_lists_test: %llu operations against the structures\n",
                static_cast<unsigned long long>(pulse::ds::testing::OpsCounted()));
  }
};

[[maybe_unused]] ::testing::Environment* const kOpsReport =
    ::testing::AddGlobalTestEnvironment(new OpsReport);

}  // namespace
