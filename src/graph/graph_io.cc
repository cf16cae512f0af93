#include "pulse/graph/graph_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace pulse::graph {
namespace {

constexpr char kMagic[8] = {'P', 'U', 'L', 'S', 'E', 'C', 'S', 'R'};
constexpr uint32_t kVersion = 1;
constexpr char kTextHeader[] = "AdjacencyGraph";

struct BinaryHeader {
  char magic[8];
  uint32_t version;
  uint32_t flags;
  uint64_t n;
  uint64_t m;
  uint64_t reserved[2];
};
static_assert(sizeof(BinaryHeader) == 48);

// A file read sequentially through a fixed buffer.
class Reader {
 public:
  static Result<std::unique_ptr<Reader>> Open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return errno == ENOENT ? Status::NotFound(fmt::format("graph file '{}' does not exist", path))
                             : Status::IoError(fmt::format("graph file '{}': {}", path, std::strerror(errno)));
    struct stat st;
    if (fstat(fd, &st) != 0) {
      ::close(fd);
      return Status::IoError(fmt::format("graph file '{}': {}", path, std::strerror(errno)));
    }
    return std::unique_ptr<Reader>(new Reader(path, fd, static_cast<uint64_t>(st.st_size)));
  }
  ~Reader() { ::close(fd_); }

  uint64_t file_bytes() const { return file_bytes_; }
  const std::string& path() const { return path_; }

  // The next byte, or -1 at the end of the file.
  Result<int> Get() {
    if (pos_ == len_) PULSE_RETURN_IF_ERROR(Fill());
    if (pos_ == len_) return -1;
    return static_cast<unsigned char>(buf_[pos_++]);
  }
  // Exactly `bytes` bytes into dst.
  Status ReadExact(void* dst, uint64_t bytes) {
    auto* out = static_cast<char*>(dst);
    while (bytes > 0) {
      if (pos_ == len_) PULSE_RETURN_IF_ERROR(Fill());
      if (pos_ == len_) return Status::InvalidArgument(fmt::format("graph file '{}' ends early", path_));
      size_t k = std::min<uint64_t>(bytes, len_ - pos_);
      std::memcpy(out, buf_.data() + pos_, k);
      pos_ += k;
      out += k;
      bytes -= k;
    }
    return Status::Ok();
  }
  // The next unsigned decimal number after whitespace; `what` and `index`
  // (when not -1) name it in errors, formatted only then.
  Result<uint64_t> Number(const char* what, int64_t index = -1) {
    int c;
    do {
      PULSE_ASSIGN_OR_RETURN(c, Get());
    } while (c == ' ' || c == '\n' || c == '\r' || c == '\t');
    if (c < '0' || c > '9')
      return Status::InvalidArgument(fmt::format("graph file '{}': {} expected, found {}", path_, Name(what, index),
                                                 c < 0 ? std::string("the end of the file") : fmt::format("byte {:#x}", c)));
    uint64_t v = 0;
    while (c >= '0' && c <= '9') {
      if (v > (UINT64_MAX - 9) / 10) return Status::InvalidArgument(fmt::format("graph file '{}': {} overflows", path_, Name(what, index)));
      v = v * 10 + static_cast<uint64_t>(c - '0');
      PULSE_ASSIGN_OR_RETURN(c, Get());
    }
    if (c >= 0) --pos_;  // give back the separator
    return v;
  }
  // Only whitespace remains.
  Status ExpectEnd() {
    for (;;) {
      PULSE_ASSIGN_OR_RETURN(int c, Get());
      if (c < 0) return Status::Ok();
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
        return Status::InvalidArgument(fmt::format("graph file '{}': unexpected data after the last edge", path_));
    }
  }

 private:
  static std::string Name(const char* what, int64_t index) {
    return index < 0 ? std::string(what) : fmt::format("{} {}", what, index);
  }
  Reader(std::string path, int fd, uint64_t bytes) : path_(std::move(path)), fd_(fd), file_bytes_(bytes), buf_(1 << 22) {}
  Status Fill() {
    ssize_t r;
    do {
      r = ::read(fd_, buf_.data(), buf_.size());
    } while (r < 0 && errno == EINTR);
    if (r < 0) return Status::IoError(fmt::format("graph file '{}': {}", path_, std::strerror(errno)));
    pos_ = 0;
    len_ = static_cast<size_t>(r);
    return Status::Ok();
  }

  std::string path_;
  int fd_;
  uint64_t file_bytes_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
};

// A file written through stdio's buffer.
class Writer {
 public:
  static Result<std::unique_ptr<Writer>> Create(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return Status::IoError(fmt::format("cannot create '{}': {}", path, std::strerror(errno)));
    return std::unique_ptr<Writer>(new Writer(path, f));
  }
  ~Writer() {
    if (f_ != nullptr) std::fclose(f_);
  }
  void Write(const void* p, size_t bytes) { std::fwrite(p, 1, bytes, f_); }
  void Text(const std::string& s) { Write(s.data(), s.size()); }
  Status Close() {
    bool bad = std::ferror(f_) != 0;
    bad |= std::fclose(f_) != 0;
    f_ = nullptr;
    return bad ? Status::IoError(fmt::format("cannot write '{}'", path_)) : Status::Ok();
  }

 private:
  Writer(std::string path, FILE* f) : path_(std::move(path)), f_(f) { std::setvbuf(f_, nullptr, _IOFBF, 1 << 22); }
  std::string path_;
  FILE* f_;
};

Status CheckCounts(const Reader& in, uint64_t n, uint64_t m, uint64_t min_bytes) {
  if (n >= kNoVertex)
    return Status::InvalidArgument(fmt::format("graph file '{}': {} vertices exceed 32-bit ids", in.path(), n));
  if (min_bytes > in.file_bytes())
    return Status::InvalidArgument(fmt::format("graph file '{}' declares n = {}, m = {}, which needs at least {} bytes; it has {}",
                                               in.path(), n, m, min_bytes, in.file_bytes()));
  return Status::Ok();
}

}  // namespace

Result<CsrGraph> ReadAdjacencyGraph(const std::string& path, bool symmetric, ArraySpace& space) {
  PULSE_ASSIGN_OR_RETURN(auto in, Reader::Open(path));
  char header[sizeof(kTextHeader) - 1];
  if (in->file_bytes() < sizeof(header) || !in->ReadExact(header, sizeof(header)).ok() ||
      std::memcmp(header, kTextHeader, sizeof(header)) != 0)
    return Status::InvalidArgument(fmt::format("graph file '{}' does not start with AdjacencyGraph", path));
  PULSE_ASSIGN_OR_RETURN(uint64_t n, in->Number("the vertex count"));
  PULSE_ASSIGN_OR_RETURN(uint64_t m, in->Number("the edge count"));
  // Every number takes at least a digit and a separator.  (Saturating: a
  // huge m must not wrap around.)
  uint64_t numbers = n > UINT64_MAX / 4 || m > UINT64_MAX / 4 ? UINT64_MAX / 2 : n + m;
  PULSE_RETURN_IF_ERROR(CheckCounts(*in, n, m, 2 * numbers));
  PULSE_ASSIGN_OR_RETURN(auto offsets, SpaceArray<uint64_t>::Make(space, "offsets", n + 1));
  PULSE_ASSIGN_OR_RETURN(auto edges, SpaceArray<VertexId>::Make(space, "edges", m));
  for (uint64_t v = 0; v < n; ++v) {
    PULSE_ASSIGN_OR_RETURN(offsets[v], in->Number("offset", static_cast<int64_t>(v)));
  }
  offsets[n] = m;
  for (uint64_t e = 0; e < m; ++e) {
    PULSE_ASSIGN_OR_RETURN(uint64_t t, in->Number("edge", static_cast<int64_t>(e)));
    if (t >= n) return Status::InvalidArgument(fmt::format("graph file '{}': edge {} targets {} (n = {})", path, e, t, n));
    edges[e] = static_cast<VertexId>(t);
  }
  PULSE_RETURN_IF_ERROR(in->ExpectEnd());
  auto g = CsrGraph::FromArrays(std::move(offsets), std::move(edges), symmetric, space);
  if (!g.ok()) return Status::InvalidArgument(fmt::format("{} (in '{}')", g.status().message(), path));
  return g;
}

Status WriteAdjacencyGraph(const CsrGraph& g, const std::string& path) {
  PULSE_ASSIGN_OR_RETURN(auto out, Writer::Create(path));
  out->Text(fmt::format("{}\n{}\n{}\n", kTextHeader, g.num_vertices(), g.num_edges()));
  for (uint64_t v = 0; v < g.num_vertices(); ++v) out->Text(fmt::format("{}\n", g.offsets()[v]));
  for (uint64_t e = 0; e < g.num_edges(); ++e) out->Text(fmt::format("{}\n", g.edges()[e]));
  return out->Close();
}

Result<CsrGraph> ReadBinaryGraph(const std::string& path, ArraySpace& space) {
  PULSE_ASSIGN_OR_RETURN(auto in, Reader::Open(path));
  BinaryHeader h;
  if (in->file_bytes() < sizeof(h) || !in->ReadExact(&h, sizeof(h)).ok() || std::memcmp(h.magic, kMagic, 8) != 0)
    return Status::InvalidArgument(fmt::format("graph file '{}' has no PULSECSR header", path));
  if (h.version != kVersion)
    return Status::InvalidArgument(fmt::format("graph file '{}' has version {}, this build reads {}", path, h.version, kVersion));
  if (h.n >= kNoVertex || h.m > (UINT64_MAX - sizeof(h)) / 16)
    return Status::InvalidArgument(fmt::format("graph file '{}': n = {} or m = {} is out of range", path, h.n, h.m));
  uint64_t expected = sizeof(h) + (h.n + 1) * sizeof(uint64_t) + h.m * sizeof(VertexId);
  if (expected != in->file_bytes())
    return Status::InvalidArgument(fmt::format("graph file '{}' declares n = {}, m = {} ({} bytes) but has {} bytes", path,
                                               h.n, h.m, expected, in->file_bytes()));
  PULSE_ASSIGN_OR_RETURN(auto offsets, SpaceArray<uint64_t>::Make(space, "offsets", h.n + 1));
  PULSE_ASSIGN_OR_RETURN(auto edges, SpaceArray<VertexId>::Make(space, "edges", h.m));
  PULSE_RETURN_IF_ERROR(in->ReadExact(offsets.data(), (h.n + 1) * sizeof(uint64_t)));
  PULSE_RETURN_IF_ERROR(in->ReadExact(edges.data(), h.m * sizeof(VertexId)));
  auto g = CsrGraph::FromArrays(std::move(offsets), std::move(edges), (h.flags & 1) != 0, space);
  if (!g.ok()) return Status::InvalidArgument(fmt::format("{} (in '{}')", g.status().message(), path));
  return g;
}

Status WriteBinaryGraph(const CsrGraph& g, const std::string& path) {
  PULSE_ASSIGN_OR_RETURN(auto out, Writer::Create(path));
  BinaryHeader h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.flags = g.symmetric() ? 1 : 0;
  h.n = g.num_vertices();
  h.m = g.num_edges();
  out->Write(&h, sizeof(h));
  out->Write(g.offsets(), (g.num_vertices() + 1) * sizeof(uint64_t));
  out->Write(g.edges(), g.num_edges() * sizeof(VertexId));
  return out->Close();
}

Result<CsrGraph> LoadGraph(const std::string& path, bool symmetric, ArraySpace& space) {
  char first[8] = {};
  {
    PULSE_ASSIGN_OR_RETURN(auto in, Reader::Open(path));
    if (in->file_bytes() >= sizeof(first)) PULSE_RETURN_IF_ERROR(in->ReadExact(first, sizeof(first)));
  }
  if (std::memcmp(first, kMagic, sizeof(first)) == 0) return ReadBinaryGraph(path, space);
  return ReadAdjacencyGraph(path, symmetric, space);
}

}  // namespace pulse::graph
