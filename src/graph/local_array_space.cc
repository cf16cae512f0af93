// LocalArraySpace: each array its own anonymous mapping.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "pulse/graph/array_space.h"

namespace pulse::graph {
namespace {

class LocalArraySpace : public ArraySpace {
 public:
  ~LocalArraySpace() override {
    for (auto& [base, bytes] : arrays_) munmap(base, bytes);
  }

  Result<void*> Allocate(const std::string& name, size_t bytes) override {
    if (bytes == 0) return Status::InvalidArgument(fmt::format("array '{}': zero bytes", name));
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return Status::ResourceExhausted(fmt::format("array '{}': mmap of {} bytes: {}", name, bytes, std::strerror(errno)));
    std::lock_guard<std::mutex> lock(mu_);
    arrays_[p] = bytes;
    return p;
  }

  Status MarkReadOnly(void* base) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!arrays_.contains(base)) return Status::NotFound("local array space: MarkReadOnly of an unknown array");
    return Status::Ok();  // local memory gains nothing from knowing
  }

  Status Free(void* base) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = arrays_.find(base);
    if (it == arrays_.end()) return Status::NotFound("local array space: Free of an unknown array");
    munmap(base, it->second);
    arrays_.erase(it);
    return Status::Ok();
  }

 private:
  std::mutex mu_;
  std::unordered_map<void*, size_t> arrays_;
};

}  // namespace

std::unique_ptr<ArraySpace> MakeLocalArraySpace() { return std::make_unique<LocalArraySpace>(); }

}  // namespace pulse::graph
