#include "bench/app_driver.h"

#include <cctype>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "pulse/apps/btrdb.h"
#include "pulse/apps/webservice.h"
#include "pulse/apps/wiredtiger.h"

namespace pulse::bench {
namespace {

using nlohmann::json;

class WebServiceDriver : public AppDriver {
 public:
  explicit WebServiceDriver(std::unique_ptr<apps::WebService> app) : app_(std::move(app)) {}
  Status Request() override {
    op_ = app_->NextOperation();
    auto r = app_->Serve(op_);
    if (!r.ok()) return r.status();
    if (!r->found) return Status::Internal(fmt::format("webservice: user {} not found", op_.key));
    answer_ = std::move(*r);
    return Status::Ok();
  }
  Result<bool> CheckLast() override {
    // Open one response in 64: decrypting every one would make the bench's
    // checking, not the service, the client's main cost.
    if (op_.op != apps::ycsb::Op::kRead || ++reads_ % 64 != 0) return false;
    auto obj = app_->Open(answer_);
    if (!obj.ok()) return obj.status();
    if (*obj != app_->Expected(op_.key)) return Status::Internal(fmt::format("webservice: wrong object for user {}", op_.key));
    return true;
  }

 private:
  std::unique_ptr<apps::WebService> app_;
  apps::ycsb::Operation op_{};
  apps::WebResponse answer_{};
  uint64_t reads_ = 0;
};

class WiredTigerDriver : public AppDriver {
 public:
  WiredTigerDriver(std::unique_ptr<apps::WiredTiger> app, uint32_t scan_length)
      : app_(std::move(app)), scan_length_(scan_length) {}
  Status Request() override {
    op_ = app_->NextOperation();
    if (scan_length_ != 0 && op_.op == apps::ycsb::Op::kScan) op_.scan_length = scan_length_;
    auto r = app_->Serve(op_);
    if (!r.ok()) return r.status();
    answer_ = std::move(*r);
    return Status::Ok();
  }
  Result<bool> CheckLast() override {
    if (op_.op != apps::ycsb::Op::kScan) return false;
    if (answer_ != app_->NativeScan(op_.key, std::min(op_.scan_length, apps::kWiredTigerMaxScan)))
      return Status::Internal(fmt::format("wiredtiger: wrong scan from key {} ({} records)", op_.key, op_.scan_length));
    return true;
  }

 private:
  std::unique_ptr<apps::WiredTiger> app_;
  uint32_t scan_length_;
  apps::ycsb::Operation op_{};
  std::vector<apps::ScanRecord> answer_;
};

class BtrdbDriver : public AppDriver {
 public:
  BtrdbDriver(std::unique_ptr<apps::Btrdb> app, uint64_t seed) : app_(std::move(app)), rng_(seed) {}
  Status Request() override {
    query_ = app_->NextQuery(rng_);
    auto r = app_->Run(query_);
    if (!r.ok()) return r.status();
    answer_ = *r;
    return Status::Ok();
  }
  Result<bool> CheckLast() override {
    const double want = app_->Native(query_);
    if (std::fabs(answer_ - want) > 1e-9 * std::max(1.0, std::fabs(want)))
      return Status::Internal(fmt::format("btrdb: {} over [{}, {}] = {}, expected {}", apps::TsvStatName(query_.stat),
                                          query_.lo, query_.hi, answer_, want));
    return true;
  }
  // Iterations of the pulse iterator per query, by window (the figures of
  // CHASE Table 2), over 50 random queries each.
  Result<json> Extra() override {
    json by_window = json::object();
    for (double w : apps::Btrdb::kWindowsSeconds) {
      const uint64_t ticks = static_cast<uint64_t>(w * apps::UpmuGenerator::kReadingsPerSecond);
      uint64_t total = 0;
      constexpr int kQueries = 50;
      for (int i = 0; i < kQueries; ++i) {
        const uint64_t lo = rng_() % (app_->values().size() - ticks + 1);
        uint32_t iterations = 0;
        auto a = app_->tree().Aggregate(lo, lo + ticks - 1, &iterations);
        if (!a.ok()) return a.status();
        total += iterations;
      }
      by_window[fmt::format("{}", w)] = static_cast<double>(total) / kQueries;
    }
    return json{{"iterations_by_window_s", by_window}, {"tree_height", app_->tree().height()}};
  }

 private:
  std::unique_ptr<apps::Btrdb> app_;
  std::mt19937_64 rng_;
  apps::TsvQuery query_{};
  double answer_ = 0;
};

}  // namespace

Result<std::unique_ptr<AppDriver>> LoadApp(const AppBenchOptions& o, uint64_t size, uint64_t seed,
                                           apps::AppSystem* system) {
  if (o.app == "webservice") {
    apps::WebServiceOptions wo;
    wo.users = size;
    wo.workload = static_cast<char>(std::toupper(static_cast<unsigned char>(o.workload)));
    if (o.distribution == "uniform") {
      wo.distribution = apps::ycsb::Distribution::kUniform;
    } else if (o.distribution != "zipfian") {
      return Status::InvalidArgument(fmt::format("bench app: --distribution '{}' (zipfian or uniform)", o.distribution));
    }
    wo.chain_length = o.chain_length;
    wo.seed = seed;
    wo.insert_fraction = o.insert_fraction;
    wo.regions_per_request = o.offload_alloc ? 1 : 0;
    auto app = apps::WebService::Load(system, wo);
    if (!app.ok()) return app.status();
    return std::unique_ptr<AppDriver>(new WebServiceDriver(std::move(*app)));
  } else if (o.app == "wiredtiger") {
    apps::WiredTigerOptions wo;
    wo.records = size;
    wo.seed = seed;
    if (o.allocation == "partitioned") wo.partition = ds::BTreePartition{};  // halves of the hashed key space
    auto app = apps::WiredTiger::Load(system, wo);
    if (!app.ok()) return app.status();
    return std::unique_ptr<AppDriver>(new WiredTigerDriver(std::move(*app), o.scan_length));
  } else if (o.app == "btrdb") {
    apps::BtrdbOptions bo;
    bo.seconds = static_cast<double>(size);
    bo.seed = seed;
    auto app = apps::Btrdb::Load(system, bo);
    if (!app.ok()) return app.status();
    return std::unique_ptr<AppDriver>(new BtrdbDriver(std::move(*app), seed));
  }
  return Status::InvalidArgument(fmt::format("bench: unknown app '{}' (webservice, wiredtiger, btrdb)", o.app));
}

}  // namespace pulse::bench
