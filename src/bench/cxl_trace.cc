#include "bench/cxl_trace.h"

#include <fmt/format.h>

#include "bench/app_driver.h"
#include "bench/bench_cluster.h"
#include "pulse/apps/btrdb.h"
#include "pulse/apps/wiredtiger.h"

namespace pulse::bench {

CxlRecorder::~CxlRecorder() {
  if (recording_) SetThreadTraversalObserver(previous_);
}

void CxlRecorder::BeginOp() {
  if (!recording_) previous_ = SetThreadTraversalObserver(this);
  recording_ = true;
  runs_ = 0;
  op_ = CxlOp{};
}

CxlOp CxlRecorder::EndOp() {
  if (recording_) SetThreadTraversalObserver(previous_);
  recording_ = false;
  return std::exchange(op_, CxlOp{});
}

void CxlRecorder::CpuAccess(uint64_t addr, uint32_t bytes, bool write) {
  if (recording_) Add(addr, bytes, write, /*traversal=*/false);
}

void CxlRecorder::OnRun() { ++runs_; }
void CxlRecorder::OnWindow(uint64_t addr, uint32_t len) { Add(addr, len, false, true); }
void CxlRecorder::OnStore(uint64_t addr, uint32_t len) { Add(addr, len, true, true); }

void CxlRecorder::Add(uint64_t addr, uint32_t bytes, bool write, bool traversal) {
  CxlAccess a;
  a.addr = addr;
  a.bytes = bytes;
  a.write = write;
  a.node = client_->NodeOf(addr).value_or(0);
  a.traversal = traversal;
  a.traversal_index = runs_ == 0 ? 0 : runs_ - 1;
  op_.accesses.push_back(a);
}

namespace {

// The pulse system with every traversal at the CPU node (the client's
// dispatch mode, no cache), its object accesses recorded.
class TracingSystem : public apps::AppSystem {
 public:
  explicit TracingSystem(std::unique_ptr<Client> client) : client_(std::move(client)), recorder_(client_.get()) {}
  std::string name() const override { return "cxl-trace"; }
  Client* client() override { return client_.get(); }
  CxlRecorder& recorder() { return recorder_; }

  Result<std::optional<uint64_t>> HashLookup(ds::UnorderedMap& map, uint64_t key) override { return map.Find(key); }
  Result<std::vector<apps::ScanRecord>> BTreeScan(ds::BTree& tree, uint64_t start, uint32_t count) override {
    return apps::OffloadedScan(client_.get(), tree.root(), start, count, ExecutionMode::kCpuNode);
  }
  Result<ds::Aggregate> TsvAggregate(apps::TsvTree& tree, uint64_t lo, uint64_t hi) override {
    return tree.Aggregate(lo, hi);
  }
  Status ReadObject(uint64_t addr, void* dst, size_t length) override {
    recorder_.CpuAccess(addr, static_cast<uint32_t>(length), false);
    return client_->Read(addr, dst, length);
  }
  Status WriteObject(uint64_t addr, const void* src, size_t length) override {
    recorder_.CpuAccess(addr, static_cast<uint32_t>(length), true);
    return client_->Write(addr, src, length);
  }

 private:
  std::unique_ptr<Client> client_;
  CxlRecorder recorder_;
};

}  // namespace

Result<CxlTrace> CaptureAppTrace(const CxlCaptureOptions& o) {
  if (o.app != "webservice" && o.app != "wiredtiger" && o.app != "btrdb")
    return Status::InvalidArgument(fmt::format("cxl trace: unknown app '{}' (webservice, wiredtiger, btrdb)", o.app));
  if (o.ops == 0) return Status::InvalidArgument("cxl trace: ops must be at least 1");
  if (o.memory_nodes == 0) return Status::InvalidArgument("cxl trace: memory_nodes must be at least 1");
  BenchClusterOptions c = BenchClusterOptionsFor("bench-cxl", o);
  c.memory_nodes = o.memory_nodes;
  cluster::ClusterGuard guard;
  auto address = StartOrJoinBenchCluster(c, "", &guard);
  if (!address.ok()) return address.status();

  CxlTrace trace;
  trace.app = o.app;
  {
    ClientOptions co;
    co.switch_address = *address;
    co.worker.transports = o.ucx_tls;
    co.worker.name = "bench-cxl";
    co.slab_bytes = o.slab_bytes;
    co.dispatch.mode = ExecutionMode::kCpuNode;  // every traversal through the interpreter, here
    auto client = Client::Connect(co);
    if (!client.ok()) return client.status();
    TracingSystem system(std::move(*client));
    if (o.progress) o.progress(fmt::format("loading {} on {} memory node(s)", o.app, o.memory_nodes));
    // bench app's drivers on their defaults (workload C, zipfian, no
    // inserts), which check each answer against the native computation.
    AppBenchOptions app;
    app.app = o.app;
    app.chain_length = o.chain_length;
    const uint64_t size = o.size ? o.size : o.app == "webservice" ? 2000 : o.app == "wiredtiger" ? 5000 : 180;
    auto driver = LoadApp(app, size, o.seed, &system);
    if (!driver.ok()) return driver.status();
    if (o.progress) o.progress(fmt::format("capturing {} operations of {}", o.ops, o.app));
    trace.ops.reserve(o.ops);
    for (uint64_t i = 0; i < o.ops; ++i) {
      system.recorder().BeginOp();
      const Status st = (*driver)->Request();
      trace.ops.push_back(system.recorder().EndOp());
      PULSE_RETURN_IF_ERROR(st);
      PULSE_RETURN_IF_ERROR((*driver)->CheckLast().status());
    }
  }
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return trace;
}

}  // namespace pulse::bench
