// The `pulse bench ds` targets of forward_list, unordered_set, bimap and skip_list: loaded with
// keys 0..n-1, every key is found and keys beyond are not, in each of kModes.
#include <set>
#include <string>

#include "bench/ds_bench_targets_lists.h"
#include "support/ds_cluster.h"
#include "ds/lists_test_util.h"

namespace pulse::ds::testing {
namespace {

using DsListBenchTargets = DsCluster;

TEST_F(DsListBenchTargets, LoadAndLookUpInEveryMode) {
  bench::DsBenchTargets targets;
  bench::AddListBenchTargets(targets);
  std::set<std::string> names;
  for (auto& target : targets) names.insert(target->name());
  EXPECT_EQ(names, (std::set<std::string>{"forward_list", "unordered_set", "bimap", "skip_list"}));
  constexpr uint64_t kKeys = 40;
  for (auto& target : targets) {
    EXPECT_EQ(target->Lookup(0, ExecutionMode::kOffload).status().code(),
              Status::Code::kInvalidArgument)
        << target->name() << ": lookup before load";
    ASSERT_TRUE(target->Load(client_.get(), kKeys).ok()) << target->name();
    for (uint64_t key = 0; key < kKeys + 5; ++key) {
      for (ExecutionMode mode : kModes) {
        auto found = target->Lookup(key, mode);
        ASSERT_TRUE(found.ok()) << target->name() << ": " << found.status().ToString();
        EXPECT_EQ(*found, key < kKeys) << target->name() << " key " << key;
        ++OpsCounted();
      }
    }
  }
}

}  // namespace
}  // namespace pulse::ds::testing
