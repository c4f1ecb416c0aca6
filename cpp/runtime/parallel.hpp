// OpenMP helpers: thread ids that work without OpenMP, and carrying the
// first exception out of a parallel region (none may escape one); and the
// cache-line-aligned buffers that threads fill.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>

#include "runtime/block_cache.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sscrf {

inline int thread_id() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

// Threads of the parallel region the caller is in (1 outside one).
inline int team_size() {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// GNU OpenMP cannot start threads in a process forked after the parent ran
// a parallel region on several threads: the child's first such region
// waits forever for a pool that was not copied (a multiprocessing worker,
// started by fork, that predicts with the model its parent trained). So
// the process notes when it first starts threads, and a child forked after
// that runs every region on one thread (parallel.cpp).
void note_threads_started() noexcept;
bool forked_after_threads() noexcept;

// Threads actually started for `work` independent items: the request, but
// no more than the items and no more than 8 per processor, and one in a
// process forked after its parent started threads (above). More threads
// than cores is allowed; thousands of idle threads only fail to start.
// Results never depend on this number.
inline int effective_threads(int requested, int64_t work) {
#ifdef _OPENMP
  const int64_t cap = 8 * static_cast<int64_t>(omp_get_num_procs());
#else
  const int64_t cap = 1;
#endif
  int64_t n = requested;
  if (n > work) n = work;
  if (n > cap) n = cap;
  if (n <= 1) return 1;
  if (forked_after_threads()) return 1;
  note_threads_started();
  return static_cast<int>(n);
}

// The allocator of the buffers that the kernels read a vec4 at a time:
// each starts on a cache line, so that rows of ld doubles (a multiple of 4)
// are whole vec4s within lines. malloc aligns to 16 bytes only, and a row
// whose vec4s straddle two lines made a vector-matrix product 1.3x slower.
constexpr std::size_t kCacheLine = 64;
template <class T>
struct CacheLineAligned {
  using value_type = T;
  CacheLineAligned() = default;
  template <class U>
  CacheLineAligned(const CacheLineAligned<U>&) noexcept {}
  // Large blocks come from and go back to the block cache (block_cache.hpp).
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_alloc();
    if (n * sizeof(T) >= kCachedBlockBytes) return static_cast<T*>(allocate_block(n * sizeof(T)));
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kCacheLine)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= kCachedBlockBytes)
      free_block(p);
    else
      ::operator delete(p, std::align_val_t(kCacheLine));
  }
  template <class U>
  bool operator==(const CacheLineAligned<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const CacheLineAligned<U>&) const noexcept {
    return false;
  }
};

// An array of doubles that is allocated but not zeroed, for scratch that
// every use writes before it reads: a std::vector would be zero-filled by
// one thread, megabytes per evaluation that the other threads wait for.
// It starts on a cache line, and comes from the block cache, so that the
// next evaluation finds it again (block_cache.hpp).
class UninitializedBuffer {
 public:
  // At least n doubles; the contents are unspecified (NaN in a
  // SSCRF_POISON_SCRATCH build, at every call, so that the tests catch a
  // read of what no use wrote, this call's or an earlier evaluation's).
  double* reserve(size_t n) {
    if (n > size_) {
      if (n > std::numeric_limits<size_t>::max() / sizeof(double)) throw std::bad_alloc();
      data_.reset();
      data_.reset(static_cast<double*>(allocate_block(n * sizeof(double))));
      size_ = n;
    }
#ifdef SSCRF_POISON_SCRATCH
    std::fill(data_.get(), data_.get() + n, std::numeric_limits<double>::quiet_NaN());
#endif
    return data_.get();
  }
  double* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(double* p) const noexcept { free_block(p); }
  };
  std::unique_ptr<double, Free> data_;
  size_t size_ = 0;
};

class ExceptionCarrier {
 public:
  template <class F>
  void run(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_) first_ = std::current_exception();
    }
  }
  void rethrow() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

}  // namespace sscrf
