// The byte-level codec of pulse's binary wire formats (the traversal
// message, the far-memory agent's requests): fixed-size values in host byte
// order appended one after another, and byte strings with a u32 length.
// ByteWriter grows a vector; SpanWriter fills a buffer the caller sized
// (for encoders that reuse one buffer per message instead of allocating).
// ByteReader never reads past its input: the first read that would makes it
// !ok(), and every read after that returns a zero value, so a decoder reads
// all its fields and checks ok() once.
//
// Not thread-safe; each is used by one encoder or decoder call.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace pulse::protocol {

class ByteWriter {
 public:
  explicit ByteWriter(size_t reserve = 0) { out_.reserve(reserve); }

  template <typename T>
  void Put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  // The bytes as they are, with no length.
  void Append(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // A u32 length, then the bytes.
  void PutBytes(std::span<const uint8_t> b) {
    Put<uint32_t>(static_cast<uint32_t>(b.size()));
    Append(b);
  }
  void PutString(const std::string& s) { PutBytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()}); }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// Writes into `out`, which the caller sized for everything it will write:
// writing past the end is a programming error (checked by assert), since
// encoders compute their size before they write.
class SpanWriter {
 public:
  explicit SpanWriter(std::span<uint8_t> out) : out_(out) {}

  template <typename T>
  void Put(T v) {
    assert(at_ + sizeof(T) <= out_.size());
    std::memcpy(out_.data() + at_, &v, sizeof(T));
    at_ += sizeof(T);
  }
  // The bytes as they are, with no length.
  void Append(std::span<const uint8_t> b) {
    assert(at_ + b.size() <= out_.size());
    if (!b.empty()) std::memcpy(out_.data() + at_, b.data(), b.size());
    at_ += b.size();
  }
  size_t written() const { return at_; }

 private:
  std::span<uint8_t> out_;
  size_t at_ = 0;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}

  template <typename T>
  T Get() {
    T v{};
    if (!ok_ || remaining() < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  // The next `n` bytes as they are.
  std::vector<uint8_t> Raw(uint64_t n) {
    if (!ok_ || remaining() < n) {
      ok_ = false;
      return {};
    }
    std::vector<uint8_t> out(in_.begin() + at_, in_.begin() + at_ + n);
    at_ += n;
    return out;
  }
  // What PutBytes wrote; a length above `max` fails like a short input.
  std::vector<uint8_t> GetBytes(uint64_t max) {
    const uint32_t n = Get<uint32_t>();
    if (n > max) ok_ = false;
    return Raw(n);
  }
  std::string GetString(uint64_t max) {
    const std::vector<uint8_t> b = GetBytes(max);
    return std::string(b.begin(), b.end());
  }

  size_t remaining() const { return in_.size() - at_; }
  bool at_end() const { return at_ == in_.size(); }
  bool ok() const { return ok_; }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace pulse::protocol
