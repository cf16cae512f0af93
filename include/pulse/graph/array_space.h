// pulse::graph::ArraySpace: where a graph's arrays live — local memory, far
// memory regions mapped into the address space (the host agent of
// include/pulse/farmem/, adapted by the benchmark in src/bench/graph_spaces.*),
// or a file.  The graph framework is plain array code: it allocates every
// large array (the CSR's offsets and edges, the applications' per-vertex
// data) through an ArraySpace and then reads and writes it with ordinary
// loads and stores, so the same code runs on every space.
//
// Thread-safety: implementations must allow Allocate/MarkReadOnly/Free from
// one thread at a time; the memory they return may be used from any number
// of threads (the framework synchronises its own accesses).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "pulse/status.h"

namespace pulse::graph {

class ArraySpace {
 public:
  virtual ~ArraySpace() = default;
  // Returns `bytes` (> 0) of zero-filled memory, aligned to at least 4096
  // bytes, named `name` (for the space's diagnostics, e.g. "edges").  The
  // space owns the memory until Free(base) or the space's destruction.
  // Errors: InvalidArgument for bytes == 0, ResourceExhausted when the space
  // cannot hold the array.
  virtual Result<void*> Allocate(const std::string& name, size_t bytes) = 0;
  // Declares the array starting at `base` (a value Allocate returned)
  // complete: nothing writes it from now on (a far space may cache it).
  // Errors: NotFound for an unknown base.
  virtual Status MarkReadOnly(void* base) = 0;
  // Releases the array at `base`.  Errors: NotFound for an unknown base.
  virtual Status Free(void* base) = 0;
};

// An ArraySpace in this process's memory: each array its own anonymous
// mmap (zero-filled by the kernel, released by munmap).  Thread-safe.
std::unique_ptr<ArraySpace> MakeLocalArraySpace();

// A typed array of an ArraySpace, freed when it goes out of scope.
// Movable, not copyable; not thread-safe itself (the elements are plain
// memory the caller synchronises).
template <typename T>
class SpaceArray {
 public:
  SpaceArray() = default;
  SpaceArray(ArraySpace* space, T* data, size_t size) : space_(space), data_(data), size_(size) {}
  SpaceArray(SpaceArray&& o) noexcept { *this = std::move(o); }
  SpaceArray& operator=(SpaceArray&& o) noexcept {
    if (this != &o) {
      Reset();
      space_ = o.space_;
      data_ = o.data_;
      size_ = o.size_;
      o.space_ = nullptr;
      o.data_ = nullptr;
      o.size_ = 0;
    }
    return *this;
  }
  SpaceArray(const SpaceArray&) = delete;
  SpaceArray& operator=(const SpaceArray&) = delete;
  ~SpaceArray() { Reset(); }

  // Allocates `size` zero-filled elements of `space` (at least one element,
  // so an empty array still has a valid base).  Errors: those of Allocate.
  static Result<SpaceArray> Make(ArraySpace& space, const std::string& name, size_t size) {
    size_t bytes = (size == 0 ? 1 : size) * sizeof(T);
    PULSE_ASSIGN_OR_RETURN(void* p, space.Allocate(name, bytes));
    return SpaceArray(&space, static_cast<T*>(p), size);
  }
  // Marks the array read-only in its space (see ArraySpace::MarkReadOnly).
  Status MarkReadOnly() { return space_ == nullptr ? Status::Ok() : space_->MarkReadOnly(data_); }

  T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) const { return data_[i]; }

 private:
  void Reset() {
    // A failed Free leaves the mapping to the space's destruction; nothing
    // here can report it (destructor).
    if (space_ != nullptr && data_ != nullptr) IgnoreError(space_->Free(data_));
    space_ = nullptr;
    data_ = nullptr;
  }
  ArraySpace* space_ = nullptr;
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace pulse::graph
