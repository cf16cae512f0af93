#include "agent/memory_agent.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "farmem/agent_wire.h"

namespace pulse::agent {
namespace {

using farmem::AgentOp;
using farmem::AgentReply;
using farmem::AgentRequest;
using farmem::PageClass;

// The largest range one request may read, write or preload.
constexpr uint64_t kMaxRequestBytes = uint64_t{256} << 20;

struct ClassCounters {
  uint64_t ops = 0;
  uint64_t bytes = 0;
};

class MemoryAgent final : public memnode::MemNodeExtension {
 public:
  explicit MemoryAgent(const memnode::ExtensionContext& node) : node_(node) {}

  uint16_t request_am() const override { return farmem::kAmMemAgentRequest; }
  uint16_t reply_am() const override { return farmem::kAmMemAgentReply; }

  std::optional<std::vector<uint8_t>> Handle(std::span<const uint8_t> payload,
                                             const memnode::TenantCheck& authorize) override {
    Result<AgentRequest> q = farmem::DecodeAgentRequest(payload);
    if (!q.ok()) {
      ++malformed_;
      return std::nullopt;
    }
    AgentReply a;
    a.request_id = q->request_id;
    // The tenant a request names must be one its connection may act for.
    Status allowed = authorize(q->tenant);
    Result<uint64_t> r = allowed.ok() ? Serve(*q, &a.data) : Result<uint64_t>(allowed);
    if (r.ok()) {
      a.value = *r;
    } else {
      ++errors_;
      a.status = r.status();
    }
    return farmem::EncodeAgentReply(a);
  }

  std::string stats_key() const override { return "farmem"; }
  nlohmann::json Stats() const override {
    nlohmann::json j;
    for (size_t c = 0; c < classes_.size(); ++c) {
      const char* name = farmem::PageClassName(static_cast<PageClass>(c));
      j[fmt::format("{}_ops", name)] = classes_[c].ops;
      j[fmt::format("{}_bytes", name)] = classes_[c].bytes;
    }
    j["preload_ops"] = preloads_.ops;
    j["preload_bytes"] = preloads_.bytes;
    j["preload_file_bytes"] = preload_file_bytes_;
    j["errors"] = errors_;
    j["malformed"] = malformed_;
    return j;
  }

 private:
  // The host bytes of [addr, addr+bytes) if the tenant may access them with
  // `perm`; an error naming the range otherwise.
  Result<uint8_t*> Locate(const AgentRequest& q, uint8_t perm) const {
    if (q.bytes == 0 || q.bytes > kMaxRequestBytes)
      return Status::InvalidArgument(fmt::format("memory agent: {} bytes at {:#x}: size must be in [1, {}]", q.bytes,
                                                 q.addr, kMaxRequestBytes));
    const Range* range = node_.table->Find(q.addr);
    if (range == nullptr || !range->ContainsSpan(q.addr, q.bytes))
      return Status::OutOfRange(fmt::format("memory agent: [{:#x}, +{}) is not inside one allocation of this node",
                                            q.addr, q.bytes));
    if (range->owner != q.tenant || (range->perms & perm) != perm)
      return Status::PermissionDenied(fmt::format("memory agent: tenant {} may not {} [{:#x}, +{})", q.tenant,
                                                  perm == kPermWrite ? "write" : "read", q.addr, q.bytes));
    return range->Translate(q.addr);
  }

  void Count(PageClass cls, uint64_t bytes) {
    ClassCounters& c = classes_[static_cast<size_t>(cls)];
    ++c.ops;
    c.bytes += bytes;
  }

  Result<uint64_t> Serve(const AgentRequest& q, std::vector<uint8_t>* out) {
    switch (q.op) {
      case AgentOp::kMemRead: {
        PULSE_ASSIGN_OR_RETURN(uint8_t * p, Locate(q, kPermRead));
        out->assign(p, p + q.bytes);
        Count(q.cls, q.bytes);
        return q.bytes;
      }
      case AgentOp::kMemWrite: {
        if (q.data.size() != q.bytes)
          return Status::InvalidArgument(fmt::format("memory agent: write at {:#x} says {} bytes and carries {}",
                                                     q.addr, q.bytes, q.data.size()));
        PULSE_ASSIGN_OR_RETURN(uint8_t * p, Locate(q, kPermWrite));
        std::memcpy(p, q.data.data(), q.bytes);
        Count(q.cls, q.bytes);
        return q.bytes;
      }
      case AgentOp::kMemPreload: {
        PULSE_ASSIGN_OR_RETURN(uint8_t * p, Locate(q, kPermWrite));
        PULSE_ASSIGN_OR_RETURN(uint64_t loaded, FillFromFile(q.file, q.first, p, q.bytes));
        ++preloads_.ops;
        preloads_.bytes += q.bytes;
        preload_file_bytes_ += loaded;
        return loaded;
      }
      default:
        return Status::InvalidArgument(fmt::format("memory agent: op {} is not a memory agent op",
                                                   static_cast<int>(q.op)));
    }
  }

  // Copies up to `bytes` of `file` from `offset` to `dst` and zeroes the
  // rest.  Returns the bytes copied from the file.
  static Result<uint64_t> FillFromFile(const std::string& file, uint64_t offset, uint8_t* dst, uint64_t bytes) {
    uint64_t done = 0;
    if (!file.empty()) {
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        return Status::InvalidArgument(fmt::format("memory agent: cannot open {}: {}", file, std::strerror(errno)));
      while (done < bytes) {
        const ssize_t n = ::pread(fd, dst + done, bytes - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          const int err = errno;
          ::close(fd);
          return Status::IoError(fmt::format("memory agent: reading {} at {}: {}", file, offset + done,
                                             std::strerror(err)));
        }
        if (n == 0) break;  // end of file: zeros from here
        done += static_cast<uint64_t>(n);
      }
      ::close(fd);
    }
    std::memset(dst + done, 0, bytes - done);
    return done;
  }

  memnode::ExtensionContext node_;
  std::array<ClassCounters, 4> classes_{};
  ClassCounters preloads_;
  uint64_t preload_file_bytes_ = 0;
  uint64_t errors_ = 0;
  uint64_t malformed_ = 0;
};

}  // namespace

memnode::MemNodeExtensionFactory MemoryAgentExtension() {
  return [](const memnode::ExtensionContext& node) -> std::unique_ptr<memnode::MemNodeExtension> {
    return std::make_unique<MemoryAgent>(node);
  };
}

}  // namespace pulse::agent
