// Keys: the cluster secret's and tenants' key files, and tenant key
// derivation (include/pulse/net.h, docs/security.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "net/handshake.h"
#include "pulse/net.h"

namespace pulse::net {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

std::vector<uint8_t> DeriveTenantKey(std::span<const uint8_t> cluster_secret, uint32_t tenant) {
  std::vector<uint8_t> msg = {'p', 'u', 'l', 's', 'e', '-', 't', 'e', 'n', 'a', 'n', 't', '-', 'v', '1', 0};
  for (int i = 0; i < 4; ++i) msg.push_back(static_cast<uint8_t>(tenant >> (8 * i)));
  std::vector<uint8_t> out(kKeySize);
  unsigned int len = 0;
  static const uint8_t kEmpty = 0;
  HMAC(EVP_sha256(), cluster_secret.empty() ? &kEmpty : cluster_secret.data(),
       static_cast<int>(cluster_secret.size()), msg.data(), msg.size(), out.data(), &len);
  return out;
}

Result<std::vector<uint8_t>> ReadKeyFile(const std::string& path) {
  const std::string what = "key file " + path;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(what + " does not exist");
    if (errno == ELOOP) return Status::InvalidArgument(what + " is a symbolic link");
    return Status::IoError(Errno(what));
  }
  struct stat st {};
  Status bad;
  if (fstat(fd, &st) != 0) {
    bad = Status::IoError(Errno(what));
  } else if (!S_ISREG(st.st_mode)) {
    bad = Status::InvalidArgument(what + " is not a regular file");
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    bad = Status::InvalidArgument(what + " may be read or written by others (mode " + mode + "); chmod 600 it");
  } else if (st.st_size != static_cast<off_t>(kKeySize)) {
    bad = Status::InvalidArgument(what + " has " + std::to_string(st.st_size) + " bytes, expected " +
                                  std::to_string(kKeySize));
  }
  std::vector<uint8_t> key(kKeySize);
  if (bad.ok()) {
    size_t got = 0;
    while (got < key.size()) {
      ssize_t n = read(fd, key.data() + got, key.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        bad = Status::IoError(what + ": short read");
        break;
      }
      got += static_cast<size_t>(n);
    }
  }
  close(fd);
  if (!bad.ok()) return bad;
  return key;
}

Status WriteKeyFile(const std::string& path, std::span<const uint8_t> key) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return Status::AlreadyExists("key file " + path + " exists");
    return Status::IoError(Errno("key file " + path));
  }
  size_t put = 0;
  while (put < key.size()) {
    ssize_t n = write(fd, key.data() + put, key.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    put += static_cast<size_t>(n);
  }
  const bool ok = put == key.size() && fsync(fd) == 0;
  close(fd);
  if (!ok) {
    unlink(path.c_str());
    return Status::IoError("key file " + path + ": write failed");
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> NewRandomKey() {
  std::vector<uint8_t> key(kKeySize);
  PULSE_RETURN_IF_ERROR(handshake::RandomBytes(key));
  return key;
}

}  // namespace pulse::net
