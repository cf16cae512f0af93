// The regions a backend created or attached, by the ids it handed out.
// Thread-safe: every access runs under the table's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "pulse/status.h"

namespace pulse::farmem {

template <typename Region>
class RegionTable {
 public:
  // Stores `region`; returns its new id (ids start at 1, never reused).
  uint64_t Add(Region region) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = next_id_++;
    regions_.emplace(id, std::move(region));
    return id;
  }

  // Removes region `id` and returns it.  NotFound for an unknown id.
  Result<Region> Take(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regions_.find(id);
    if (it == regions_.end()) return Unknown(id);
    Region r = std::move(it->second);
    regions_.erase(it);
    return r;
  }

  // Runs `f(Region&)`, which returns a Status or a Result, under the mutex
  // and returns what it returns.  NotFound for an unknown id.
  template <typename F>
  auto With(uint64_t id, F f) -> decltype(f(std::declval<Region&>())) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regions_.find(id);
    if (it == regions_.end()) return Unknown(id);
    return f(it->second);
  }

  // Runs `f(Region&)` on every region (e.g. to release them at shutdown).
  template <typename F>
  void ForEach(F f) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, r] : regions_) f(r);
  }

 private:
  static Status Unknown(uint64_t id) { return Status::NotFound(fmt::format("region id {}: unknown", id)); }

  std::mutex mu_;
  std::map<uint64_t, Region> regions_;
  uint64_t next_id_ = 1;
};

}  // namespace pulse::farmem
