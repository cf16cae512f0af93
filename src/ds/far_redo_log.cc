#include "ds/far_redo_log.h"

#include <cstring>

#include <fmt/format.h>

namespace pulse::ds::internal {
namespace {

constexpr uint64_t kMagic = 0x72656457;  // "Wder"
constexpr size_t kCommitBytes = 16;

uint64_t Fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

Status FarRedoLog::Commit(const FarWriteFn& write, uint64_t log, const std::vector<FarWrite>& writes) {
  std::vector<uint8_t> body;
  for (const FarWrite& w : writes) {
    const uint64_t head[2] = {w.addr, w.bytes.size()};
    body.insert(body.end(), reinterpret_cast<const uint8_t*>(head), reinterpret_cast<const uint8_t*>(head) + 16);
    body.insert(body.end(), w.bytes.begin(), w.bytes.end());
  }
  if (body.size() + kCommitBytes > kBytes)
    return Status::ResourceExhausted(
        fmt::format("redo log at {:#x}: {} writes take {} bytes, more than {}", log, writes.size(), body.size(),
                    kBytes - kCommitBytes));
  PULSE_RETURN_IF_ERROR(write(log + kCommitBytes, body.data(), body.size()));
  const uint64_t commit[2] = {(kMagic << 32) | body.size(), Fnv1a(body.data(), body.size())};
  return write(log, commit, sizeof(commit));
}

Result<std::vector<FarWrite>> FarRedoLog::Load(Client* client, uint64_t log) {
  uint64_t commit[2];
  PULSE_RETURN_IF_ERROR(client->Read(log, commit, sizeof(commit)));
  std::vector<FarWrite> out;
  const uint64_t bytes = commit[0] & 0xffffffffu;
  if ((commit[0] >> 32) != kMagic || bytes == 0 || bytes + kCommitBytes > kBytes) return out;
  std::vector<uint8_t> body(bytes);
  PULSE_RETURN_IF_ERROR(client->Read(log + kCommitBytes, body.data(), body.size()));
  if (Fnv1a(body.data(), body.size()) != commit[1]) return out;  // torn or stale: never committed
  for (size_t at = 0; at + 16 <= body.size();) {
    uint64_t head[2];
    std::memcpy(head, body.data() + at, 16);
    at += 16;
    if (head[1] > body.size() - at)
      return Status::Internal(fmt::format("redo log at {:#x}: an entry overruns the body", log));
    out.push_back(FarWrite{head[0], std::vector<uint8_t>(body.begin() + at, body.begin() + at + head[1])});
    at += head[1];
  }
  return out;
}

Status FarRedoLog::Apply(const FarWriteFn& write, const std::vector<FarWrite>& writes) {
  for (const FarWrite& w : writes) PULSE_RETURN_IF_ERROR(write(w.addr, w.bytes.data(), w.bytes.size()));
  return Status::Ok();
}

Status FarRedoLog::Clear(const FarWriteFn& write, uint64_t log) {
  const uint64_t zero[2] = {0, 0};
  return write(log, zero, sizeof(zero));
}

}  // namespace pulse::ds::internal
