// The BTrDB-like application: readings, queries and answers
// (include/pulse/apps/btrdb.h).
#include <cmath>

#include <fmt/format.h>

#include "pulse/apps/btrdb.h"

namespace pulse::apps {

const char* TsvStatName(TsvStat s) {
  switch (s) {
    case TsvStat::kSum: return "sum";
    case TsvStat::kAverage: return "avg";
    case TsvStat::kMin: return "min";
    case TsvStat::kMax: return "max";
  }
  return "?";
}

double TsvAnswer(TsvStat stat, const ds::Aggregate& a) {
  if (a.count == 0) return 0;
  switch (stat) {
    case TsvStat::kSum: return static_cast<double>(a.sum);
    case TsvStat::kAverage: return static_cast<double>(a.sum) / static_cast<double>(a.count);
    case TsvStat::kMin: return static_cast<double>(a.min);
    case TsvStat::kMax: return static_cast<double>(a.max);
  }
  return 0;
}

Result<std::unique_ptr<Btrdb>> Btrdb::Load(AppSystem* system, const BtrdbOptions& options,
                                           std::optional<ExecutionMode> mode) {
  const uint64_t ticks = static_cast<uint64_t>(std::llround(options.seconds * UpmuGenerator::kReadingsPerSecond));
  const uint64_t longest = static_cast<uint64_t>(kWindowsSeconds[3] * UpmuGenerator::kReadingsPerSecond);
  if (ticks < longest)
    return Status::InvalidArgument(
        fmt::format("btrdb: {} s of readings is shorter than the longest query window ({} s)", options.seconds,
                    kWindowsSeconds[3]));
  std::unique_ptr<Btrdb> app(new Btrdb());
  app->system_ = system;
  UpmuGenerator gen(options.seed);
  app->values_.reserve(ticks);
  for (uint64_t t = 0; t < ticks; ++t) app->values_.push_back(UpmuGenerator::Encode(options.channel, gen.Next()[options.channel]));
  auto tree = TsvTree::Build(system->client(), app->values_, mode);
  if (!tree.ok()) return tree.status();
  app->tree_ = std::move(*tree);
  return app;
}

TsvQuery Btrdb::NextQuery(std::mt19937_64& rng) const {
  TsvQuery q;
  q.stat = static_cast<TsvStat>(rng() % 4);
  q.window_seconds = kWindowsSeconds[rng() % 4];
  const uint64_t w = static_cast<uint64_t>(q.window_seconds * UpmuGenerator::kReadingsPerSecond);
  q.lo = rng() % (values_.size() - w + 1);
  q.hi = q.lo + w - 1;
  return q;
}

Result<double> Btrdb::Run(const TsvQuery& q) {
  auto a = system_->TsvAggregate(*tree_, q.lo, q.hi);
  if (!a.ok()) return a.status();
  return TsvAnswer(q.stat, *a);
}

}  // namespace pulse::apps
