// aligned.hpp - 64-byte aligned vectors: SIMD loads and FFTW's fast plans.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace nk {

template <class T, size_t Alignment = 64>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U, Alignment>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(Alignment))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(Alignment)); }
  template <class U>
  struct rebind {
    using other = AlignedAllocator<U, Alignment>;
  };
  bool operator==(const AlignedAllocator&) const { return true; }
  bool operator!=(const AlignedAllocator&) const { return false; }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

}  // namespace nk
