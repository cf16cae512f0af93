#include "rpc/rpc_extension.h"

#include <fmt/format.h>

#include "pulse/cluster.h"
#include "rpc/core_clock.h"

namespace pulse::rpc {
namespace {

class RpcNodeExtension final : public memnode::MemNodeExtension {
 public:
  RpcNodeExtension(const memnode::ExtensionContext& node, const RpcServiceOptions& options)
      : service_(node.table, node.span_base, node.span_size, options) {}

  uint16_t request_am() const override { return kAmRpcRequest; }
  uint16_t reply_am() const override { return kAmRpcReply; }
  std::optional<std::vector<uint8_t>> Handle(std::span<const uint8_t> payload,
                                             const memnode::TenantCheck& authorize) override {
    return service_.Handle(payload, authorize);
  }
  void AddHelloFields(nlohmann::json* reply) const override {
    (*reply)["rpc_host_ghz"] = service_.host_ghz();
    (*reply)["rpc_core_ghz"] = service_.core_ghz();
  }
  std::string stats_key() const override { return "rpc"; }
  nlohmann::json Stats() const override {
    const RpcServiceCounters& r = service_.counters();
    return {{"calls", r.calls},         {"wimpy_calls", r.wimpy_calls},     {"bad_requests", r.bad_requests}, {"refused", r.refused},
            {"malformed", r.malformed}, {"not_local", r.not_local},         {"continues", r.continues},
            {"faults", r.faults},       {"steps", r.steps},                 {"exec_ns", r.exec_ns},
            {"spin_ns", r.spin_ns},     {"host_ghz", service_.host_ghz()}, {"core_ghz", service_.core_ghz()}};
  }
  std::string StartupLine() const override {
    return fmt::format("rpc: host core {:.2f} GHz (dependent-add chain; /proc/cpuinfo: {:.2f}); wimpy calls emulate {:.2f} GHz",
                       service_.host_ghz(), CpuinfoGhz(), service_.core_ghz());
  }

 private:
  RpcService service_;
};

}  // namespace

memnode::MemNodeExtensionFactory RpcExtension(const RpcServiceOptions& options) {
  return [options](const memnode::ExtensionContext& node) -> std::unique_ptr<memnode::MemNodeExtension> {
    return std::make_unique<RpcNodeExtension>(node, options);
  };
}

}  // namespace pulse::rpc
