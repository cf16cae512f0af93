// The WebService application (include/pulse/apps/webservice.h).
#include "pulse/apps/webservice.h"

#include <openssl/evp.h>
#include <zstd.h>

#include <cstring>

#include <fmt/format.h>

#include "apps/apps_common.h"

namespace pulse::apps {
namespace {

constexpr size_t kIvBytes = 12, kTagBytes = 16;
constexpr int kZstdLevel = 1;
constexpr const char* kWords[] = {"profile", "session", "cart", "item", "visit", "page", "click", "region",
                                  "device", "browser", "locale", "friend", "photo", "message", "score", "level"};


}  // namespace

struct WebService::Crypto {
  uint8_t key[32];
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~Crypto() {
    EVP_CIPHER_CTX_free(ctx);
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
  }
};

std::vector<uint8_t> WebObject(uint64_t key, uint64_t version, uint32_t bytes) {
  std::string text;
  text.reserve(bytes + 64);
  uint64_t s = internal::Mix64(key ^ (version * 0x9E3779B97F4A7C15ull));
  text += fmt::format("{{\"user\":{},\"version\":{},\"data\":[", key, version);
  while (text.size() < bytes) {
    s = internal::Mix64(s + 1);
    text += fmt::format("{{\"{}\":{}}},", kWords[s % 16], (s >> 8) % 100000);
  }
  return std::vector<uint8_t>(text.begin(), text.begin() + bytes);
}

WebService::~WebService() = default;

Result<std::unique_ptr<WebService>> WebService::Load(AppSystem* system, const WebServiceOptions& options) {
  if (options.users == 0) return Status::InvalidArgument("webservice: users must be > 0");
  if (options.workload != 'A' && options.workload != 'B' && options.workload != 'C')
    return Status::InvalidArgument(fmt::format("webservice: workload '{}' is not A, B or C", options.workload));
  if (options.distribution == ycsb::Distribution::kLatest)
    return Status::InvalidArgument("webservice: key distribution must be zipfian or uniform");
  if (!(options.insert_fraction >= 0 && options.insert_fraction < 1))
    return Status::InvalidArgument(fmt::format("webservice: insert_fraction {} is not in [0, 1)", options.insert_fraction));
  auto spec = ycsb::CoreWorkload(options.workload, options.users, options.operations);
  if (!spec.ok()) return spec.status();
  spec->request_distribution = options.distribution;
  if (options.insert_fraction > 0) {
    spec->name = '?';
    spec->read *= 1 - options.insert_fraction;
    spec->update *= 1 - options.insert_fraction;
    spec->insert = options.insert_fraction;
  }
  auto workload = ycsb::Workload::Create(*spec, options.seed);
  if (!workload.ok()) return workload.status();
  std::unique_ptr<WebService> app(new WebService());
  app->system_ = system;
  app->options_ = options;
  app->workload_ = std::move(*workload);
  app->crypto_ = std::make_unique<Crypto>();
  for (int i = 0; i < 4; ++i) {
    const uint64_t k = internal::Mix64(options.seed + 7 + i);
    std::memcpy(app->crypto_->key + 8 * i, &k, 8);
  }
  ds::UnorderedMapOptions mo;
  mo.buckets = options.chain_length == 0 ? options.users : std::max<uint64_t>(1, options.users / options.chain_length);
  mo.max_load_factor = 0;  // the table is sized here (chain_length); never rehash
  mo.regions_per_request = options.regions_per_request;
  auto map = ds::UnorderedMap::Create(system->client(), mo);
  if (!map.ok()) return map.status();
  app->map_ = std::move(*map);
  // Objects first, then the index: with a round-robin allocation policy,
  // interleaving the two would put every chain node on the same memory node.
  std::vector<uint64_t> addrs(options.users);
  for (uint64_t i = 0; i < options.users; ++i) {
    auto addr = system->client()->Allocate(options.object_bytes);
    if (!addr.ok()) return addr.status();
    addrs[i] = *addr;
    const uint64_t key = app->workload_->LoadKey(i);
    const std::vector<uint8_t> obj = WebObject(key, 0, options.object_bytes);
    PULSE_RETURN_IF_ERROR(system->WriteObject(*addr, obj.data(), obj.size()));
  }
  for (uint64_t i = 0; i < options.users; ++i) {
    const uint64_t key = app->workload_->LoadKey(i);
    auto inserted = app->map_->Insert(key, addrs[i]);
    if (!inserted.ok()) return inserted.status();
    app->versions_[key] = 0;
  }
  return app;
}

Status WebService::AddUser(const ycsb::Operation& op) {
  auto addr = system_->client()->Allocate(options_.object_bytes);
  if (!addr.ok()) return addr.status();
  const std::vector<uint8_t> obj = WebObject(op.key, 0, options_.object_bytes);
  PULSE_RETURN_IF_ERROR(system_->WriteObject(*addr, obj.data(), obj.size()));
  auto inserted = map_->Insert(op.key, *addr);
  if (!inserted.ok()) return inserted.status();
  if (!*inserted) return Status::Internal(fmt::format("webservice: new user {} was already present", op.key));
  versions_[op.key] = 0;
  workload_->Acknowledge(op.keynum);
  return Status::Ok();
}

Result<WebResponse> WebService::Serve(const ycsb::Operation& op) {
  if (op.op == ycsb::Op::kInsert) {
    PULSE_RETURN_IF_ERROR(AddUser(op));
    return WebResponse{true, {}};
  }
  if (op.op != ycsb::Op::kRead && op.op != ycsb::Op::kUpdate)
    return Status::InvalidArgument(fmt::format("webservice: operation {} is not part of workloads A-C", ycsb::OpName(op.op)));
  auto addr = system_->HashLookup(*map_, op.key);
  if (!addr.ok()) return addr.status();
  WebResponse resp;
  if (!addr->has_value()) return resp;
  resp.found = true;
  const uint32_t n = options_.object_bytes;
  if (op.op == ycsb::Op::kUpdate) {
    const uint64_t version = ++versions_[op.key];
    const std::vector<uint8_t> obj = WebObject(op.key, version, n);
    PULSE_RETURN_IF_ERROR(system_->WriteObject(**addr, obj.data(), n));
    return resp;
  }
  buffer_.resize(n);
  PULSE_RETURN_IF_ERROR(system_->ReadObject(**addr, buffer_.data(), n));
  // zstd, then AES-256-GCM with a fresh 96-bit nonce.
  std::vector<uint8_t> packed(ZSTD_compressBound(n));
  const size_t z = ZSTD_compressCCtx(crypto_->cctx, packed.data(), packed.size(), buffer_.data(), n, kZstdLevel);
  if (ZSTD_isError(z)) return Status::Internal(std::string("webservice: zstd: ") + ZSTD_getErrorName(z));
  resp.payload.resize(kIvBytes + z + kTagBytes);
  uint8_t* iv = resp.payload.data();
  const uint64_t nonce = ++nonce_;
  std::memset(iv, 0, kIvBytes);
  std::memcpy(iv, &nonce, 8);
  EVP_CIPHER_CTX* ctx = crypto_->ctx;
  int len = 0, fin = 0;
  if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, crypto_->key, iv) != 1 ||
      EVP_EncryptUpdate(ctx, iv + kIvBytes, &len, packed.data(), static_cast<int>(z)) != 1 ||
      EVP_EncryptFinal_ex(ctx, iv + kIvBytes + len, &fin) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, iv + kIvBytes + z) != 1)
    return Status::Internal("webservice: AES-256-GCM encryption failed");
  return resp;
}

Result<std::vector<uint8_t>> WebService::Open(const WebResponse& r) const {
  if (r.payload.size() < kIvBytes + kTagBytes) return Status::InvalidArgument("webservice: response too short");
  const size_t z = r.payload.size() - kIvBytes - kTagBytes;
  const uint8_t* iv = r.payload.data();
  std::vector<uint8_t> packed(z + 16);
  std::vector<uint8_t> tag(iv + kIvBytes + z, iv + kIvBytes + z + kTagBytes);
  EVP_CIPHER_CTX* ctx = crypto_->ctx;
  int len = 0, fin = 0;
  if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, crypto_->key, iv) != 1 ||
      EVP_DecryptUpdate(ctx, packed.data(), &len, iv + kIvBytes, static_cast<int>(z)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx, packed.data() + len, &fin) != 1)
    return Status::InvalidArgument("webservice: the response's GCM tag does not verify");
  std::vector<uint8_t> out(options_.object_bytes);
  const size_t n = ZSTD_decompressDCtx(crypto_->dctx, out.data(), out.size(), packed.data(), z);
  if (ZSTD_isError(n)) return Status::InvalidArgument(std::string("webservice: zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::vector<uint8_t> WebService::Expected(uint64_t key) const {
  auto it = versions_.find(key);
  if (it == versions_.end()) return {};
  return WebObject(key, it->second, options_.object_bytes);
}

}  // namespace pulse::apps
