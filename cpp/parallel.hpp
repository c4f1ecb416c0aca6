// OpenMP helpers: thread ids that work without OpenMP, and carrying the
// first exception out of a parallel region (none may escape one).
#pragma once

#include <exception>
#include <mutex>

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
