// OpenMP helpers: thread ids that work without OpenMP, and carrying the
// first exception out of a parallel region (none may escape one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>

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

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Threads actually started for `work` independent items: the request, but
// no more than the items and no more than 8 per processor. More threads
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
  return n < 1 ? 1 : static_cast<int>(n);
}

// An array of doubles that is allocated but not zeroed, for scratch that
// every use writes before it reads: a std::vector would be zero-filled by
// one thread, megabytes per evaluation that the other threads wait for.
// It starts on a cache line: padded rows in it are whole vec4s within
// lines (malloc's large blocks start 16 bytes past a page, so that every
// other vec4 of such a row straddled two lines).
class UninitializedBuffer {
 public:
  // At least n doubles; the contents are unspecified.
  double* reserve(size_t n) {
    if (n > size_) {
      data_.reset(static_cast<double*>(::operator new(n * sizeof(double), kAlignment)));
      size_ = n;
    }
    return data_.get();
  }
  double* data() const { return data_.get(); }

 private:
  static constexpr std::align_val_t kAlignment{64};
  struct Free {
    void operator()(double* p) const noexcept { ::operator delete(p, kAlignment); }
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
