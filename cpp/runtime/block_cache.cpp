// The process-wide list of large scratch blocks kept between evaluations (block_cache.hpp).
#include "runtime/block_cache.hpp"

#include <mutex>
#include <new>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace sscrf {

namespace {

// Each block starts with one cache line that records its usable size, so
// that free_block needs no size and a cached block handed out for a smaller
// request is still known whole.
constexpr std::size_t kHeader = 64;

// A fixed table, so that freeing never allocates.
constexpr std::size_t kSlots = 64;

struct Cache {
  std::mutex mutex;
  char* blocks[kSlots];  // bases, oldest first
  std::size_t n = 0, bytes = 0;
};

Cache* make_cache();

// Never destroyed: buffers may still be freed while static objects are torn
// down at exit.
Cache& cache() {
  static Cache* c = make_cache();
  return *c;
}

#if defined(__unix__) || defined(__APPLE__)
// A process forked while another of its threads held the lock (a Python
// thread evaluating with the GIL released) would inherit it locked, and its
// first evaluation would wait forever. The forking thread takes the lock
// across fork(), as malloc does with its own.
void lock_before_fork() { cache().mutex.lock(); }
void unlock_after_fork() { cache().mutex.unlock(); }
#endif

Cache* make_cache() {
  Cache* c = new Cache;
#if defined(__unix__) || defined(__APPLE__)
  pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
#endif
  return c;
}

std::size_t& size_of(char* base) { return *reinterpret_cast<std::size_t*>(base); }

void delete_base(char* base) noexcept { ::operator delete(base, std::align_val_t(kHeader)); }

// Removes entry i of the table (the caller holds the lock).
char* take_entry(Cache& c, std::size_t i) {
  char* base = c.blocks[i];
  for (std::size_t j = i + 1; j < c.n; ++j) c.blocks[j - 1] = c.blocks[j];
  --c.n;
  c.bytes -= size_of(base);
  return base;
}

}  // namespace

void* allocate_block(std::size_t bytes) {
  if (bytes >= kCachedBlockBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    std::size_t best = c.n;
    for (std::size_t i = 0; i < c.n; ++i) {
      const std::size_t size = size_of(c.blocks[i]);
      if (size >= bytes && size / 2 <= bytes && (best == c.n || size < size_of(c.blocks[best])))
        best = i;
    }
    if (best < c.n) return take_entry(c, best) + kHeader;
  }
  if (bytes > static_cast<std::size_t>(-1) - kHeader) throw std::bad_alloc();
  char* base = static_cast<char*>(::operator new(bytes + kHeader, std::align_val_t(kHeader)));
  size_of(base) = bytes;
  return base + kHeader;
}

void free_block(void* p) noexcept {
  if (!p) return;
  char* base = static_cast<char*>(p) - kHeader;
  const std::size_t size = size_of(base);
  if (size < kCachedBlockBytes || size > kMaxCachedBytes) {
    delete_base(base);
    return;
  }
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  while (c.n == kSlots || c.bytes + size > kMaxCachedBytes) delete_base(take_entry(c, 0));
  c.blocks[c.n++] = base;
  c.bytes += size;
}

std::size_t release_cached_blocks() noexcept {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  const std::size_t bytes = c.bytes;
  while (c.n > 0) delete_base(take_entry(c, c.n - 1));
  return bytes;
}

std::size_t cached_block_bytes() noexcept {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.bytes;
}

}  // namespace sscrf
