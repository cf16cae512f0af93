// A PageBackend in local memory for the host agent's tests: regions are
// byte vectors; it counts reads per page, can hold reads at a gate until the
// test opens it, and can fail every read as a dead memory node would.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pulse/farmem/page_backend.h"

namespace pulse::farmem::testing {

class FakePageBackend final : public PageBackend {
 public:
  Result<uint64_t> CreateRegion(const std::string& name, uint64_t bytes, const std::string& file,
                                bool read_only) override {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = next_id_++;
    regions_[id] = Region{name, std::vector<char>(bytes, 0), read_only};
    return id;
  }

  Status ReadPages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, void* dst,
                   PageClass cls) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (dead_) return Status::Unavailable(fmt::format("memory node {} is dead", dead_node_));
    ++reads_[{id, first}];
    ++total_reads_;
    arrived_.notify_all();
    // Held until the test opens the gate; a test that never does fails here, not by hanging.
    if (!gate_cv_.wait_for(lock, std::chrono::seconds(30), [&] { return gate_open_; })) {
      return Status::Timeout("fake backend: the gate stayed closed");
    }
    const std::vector<char>& data = regions_.at(id).data;
    const uint64_t off = first * page_bytes, n = uint64_t{count} * page_bytes;
    std::memset(dst, 0, n);
    if (off < data.size()) std::memcpy(dst, data.data() + off, std::min<uint64_t>(n, data.size() - off));
    return Status::Ok();
  }

  Status WritePages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, const void* src) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<char>& data = regions_.at(id).data;
    const uint64_t off = first * page_bytes, n = uint64_t{count} * page_bytes;
    if (off < data.size()) std::memcpy(data.data() + off, src, std::min<uint64_t>(n, data.size() - off));
    ++total_writes_;
    return Status::Ok();
  }

  Status MarkReadOnly(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    regions_.at(id).read_only = true;
    return Status::Ok();
  }
  Status DestroyRegion(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    regions_.erase(id);
    return Status::Ok();
  }

  // Test controls.
  void CloseGate() {
    std::lock_guard<std::mutex> lock(mu_);
    gate_open_ = false;
  }
  void OpenGate() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gate_open_ = true;
    }
    gate_cv_.notify_all();
  }
  // Waits until `n` reads have arrived (or `timeout`); returns whether they did.
  bool WaitForReads(uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return arrived_.wait_for(lock, timeout, [&] { return total_reads_ >= n; });
  }
  void Kill(uint32_t node) {
    std::lock_guard<std::mutex> lock(mu_);
    dead_ = true;
    dead_node_ = node;
  }
  uint64_t reads(uint64_t id, uint64_t page) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reads_.find({id, page});
    return it == reads_.end() ? 0 : it->second;
  }
  uint64_t total_reads() {
    std::lock_guard<std::mutex> lock(mu_);
    return total_reads_;
  }
  uint64_t total_writes() {
    std::lock_guard<std::mutex> lock(mu_);
    return total_writes_;
  }
  // The far copy of region `id` (what a round trip must preserve).
  std::vector<char> contents(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return regions_.at(id).data;
  }
  // The id of the region named `name` (the one created last).
  uint64_t id_of(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t id = 0;
    for (auto& [i, r] : regions_) {
      if (r.name == name) id = i;
    }
    return id;
  }

 private:
  struct Region {
    std::string name;
    std::vector<char> data;
    bool read_only = false;
  };
  std::mutex mu_;
  std::condition_variable gate_cv_, arrived_;
  bool gate_open_ = true;
  bool dead_ = false;
  uint32_t dead_node_ = 0;
  std::map<uint64_t, Region> regions_;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> reads_;
  uint64_t total_reads_ = 0, total_writes_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace pulse::farmem::testing
