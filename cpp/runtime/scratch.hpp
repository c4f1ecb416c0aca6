// Per-thread scratch: vectors whose growth leaves new entries unset, and one
// such set of buffers per thread for a kernel that owns them.
#pragma once

#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "runtime/parallel.hpp"

namespace sscrf {

// The allocator of scratch vectors: entries that resize() adds are left
// unset rather than zeroed. A buffer shrinks and grows with the sentences,
// and every kernel writes each entry it reads, so zero-filling each growth
// is pure cost (5% of an entropy evaluation's instructions). Built with SSCRF_POISON_SCRATCH (CI's tuned and sanitized
// builds) the added entries are NaN instead, so that the tests catch a read
// of an entry that nothing wrote. resize(n, value) and assign still fill.
// Buffers come from Base: CacheLineAligned (on a cache line, large ones
// kept in the block cache), or std::allocator for arrays handed to numpy.
template <class T, template <class> class Base = CacheLineAligned>
struct UnsetOnGrowth : Base<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UnsetOnGrowth<U, Base>;
  };
  UnsetOnGrowth() = default;
  template <class U>
  UnsetOnGrowth(const UnsetOnGrowth<U, Base>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
#ifdef SSCRF_POISON_SCRATCH
    ::new (static_cast<void*>(p)) U(std::numeric_limits<U>::quiet_NaN());
#else
    ::new (static_cast<void*>(p)) U;
#endif
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Scratch = std::vector<double, UnsetOnGrowth<double>>;

// One T per thread of a parallel region, T being a kernel's own buffers:
// mine() is the calling thread's. Each T starts on its own cache lines
// (declare T alignas(64)), so that threads growing their buffers do not
// write each other's lines.
template <class T>
class PerThread {
 public:
  explicit PerThread(int n_threads) : items_(static_cast<size_t>(n_threads < 1 ? 1 : n_threads)) {}
  T& mine() { return items_[static_cast<size_t>(thread_id())]; }

 private:
  std::vector<T> items_;
};

}  // namespace sscrf
