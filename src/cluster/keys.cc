#include "cluster/keys.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "pulse/net.h"

namespace pulse::cluster {

Status EnsureClusterKeys(const ClusterConfig& config) {
  const std::string secret_file = config.SecretFile();
  std::error_code ec;
  const auto dir = std::filesystem::path(secret_file).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(fmt::format("cannot create '{}' for the cluster secret: {}", dir.string(), ec.message()));
  auto secret = net::ReadKeyFile(secret_file);
  if (secret.status().code() == Status::Code::kNotFound) {
    PULSE_ASSIGN_OR_RETURN(std::vector<uint8_t> fresh, net::NewRandomKey());
    Status written = net::WriteKeyFile(secret_file, fresh);
    // Another `up` may have created it meanwhile: use that one.
    if (!written.ok() && written.code() != Status::Code::kAlreadyExists) return written;
    secret = net::ReadKeyFile(secret_file);
  }
  if (!secret.ok()) return Status::InvalidArgument(fmt::format("cluster secret: {}", secret.status().message()));
  for (const TenantConfig& t : config.TenantsOrDefault()) {
    const std::string path = config.CredentialFileOf(t);
    const std::vector<uint8_t> key = net::DeriveTenantKey(*secret, t.id);
    if (auto old = net::ReadKeyFile(path); old.ok() && *old == key) continue;
    if (unlink(path.c_str()) != 0 && errno != ENOENT)
      return Status::IoError(fmt::format("cannot replace the credential of tenant {} at {}", t.id, path));
    PULSE_RETURN_IF_ERROR(net::WriteKeyFile(path, key));
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> SecretEnvironment(const ClusterConfig& config) {
  const std::string secret_file = config.SecretFile();
  struct stat st {};
  if (stat(secret_file.c_str(), &st) != 0) return {};
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(secret_file, ec).string();
  if (ec) absolute = secret_file;
  return {{net::kSecretFileEnvironmentVariable, absolute}};
}

void UseClusterSecret(const ClusterConfig& config) {
  for (const auto& [k, v] : SecretEnvironment(config)) setenv(k.c_str(), v.c_str(), /*overwrite=*/0);
}

}  // namespace pulse::cluster
