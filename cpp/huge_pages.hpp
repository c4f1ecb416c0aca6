// Buffers read at random, on transparent huge pages where the system offers
// them.
//
// Scoring and back-projection read one weight row or residual row per
// attribute occurrence, at random across several megabytes (a CoNLL-2000
// `observed` layout: 5.4 MB of row records, 2.7 MB of padded rows, and a
// 5.6 MB residual per chunk). With 4 KiB pages many of those reads also miss
// the TLB. (In a virtual machine whose host backs guest memory with 4 KiB
// pages, the TLB keeps 4 KiB entries whatever the guest uses: the page
// walks get shorter, not fewer.)
//
// numpy asks for huge pages on its arrays of 4 MiB and more; these
// allocators do the same for the kernels' own buffers of 1 MiB and more,
// each in a mapping of its own (not the malloc heap, where the advice would
// outlive the buffer), 2 MiB-aligned so that whole huge pages fit. Where
// transparent huge pages are off it is a plain mapping; on systems without
// madvise, operator new.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace sscrf {

namespace huge_pages {

constexpr std::size_t kPage = std::size_t{1} << 21;
constexpr std::size_t kMinBytes = std::size_t{1} << 20;

inline std::size_t rounded(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#define SSCRF_HUGE_PAGES 1

inline void* map(std::size_t length) {
  void* raw = mmap(nullptr, length + kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  char* begin = static_cast<char*>(raw);
  char* aligned = begin + (kPage - reinterpret_cast<std::uintptr_t>(begin) % kPage) % kPage;
  char* end = begin + length + kPage;
  if (aligned > begin) munmap(begin, aligned - begin);
  if (end > aligned + length) munmap(aligned + length, end - (aligned + length));
  madvise(aligned, length, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return aligned;
}

// The last two mappings this thread freed, for its next scratch buffers of
// the same length: an evaluation allocates the same few buffers every time,
// and mapping them afresh would cost page faults (and, with several
// threads, TLB shootdowns) per evaluation.
struct Spares {
  struct Mapping {
    void* data = nullptr;
    std::size_t length = 0;
  } slot[2];
  ~Spares() {
    for (Mapping& m : slot)
      if (m.data) munmap(m.data, m.length);
  }
};

inline Spares& spares() {
  thread_local Spares cache;
  return cache;
}

inline void* map_scratch(std::size_t length) {
  for (Spares::Mapping& m : spares().slot)
    if (m.data && m.length == length) return std::exchange(m, Spares::Mapping{}).data;
  return map(length);
}

// Keeps the freed mapping in an empty slot, or in place of the older one.
inline void unmap_scratch(void* data, std::size_t length) {
  Spares::Mapping* slot = spares().slot;
  if (slot[0].data && slot[1].data) {
    munmap(slot[1].data, slot[1].length);
    slot[1] = Spares::Mapping{};
  }
  if (slot[0].data) slot[1] = slot[0];
  slot[0] = Spares::Mapping{data, length};
}
#endif

}  // namespace huge_pages

// kScratch: a buffer rebuilt every evaluation (mappings are kept per thread
// for the next one, see Spares); otherwise a long-lived one (unmapped when
// freed).
template <class T, bool kScratch = false>
struct HugePageAllocator {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = HugePageAllocator<U, kScratch>;
  };

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U, kScratch>&) {}

  T* allocate(std::size_t n) {
    using namespace huge_pages;
    if (n > (static_cast<std::size_t>(-1) - 2 * kPage) / sizeof(T))
      throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
#ifdef SSCRF_HUGE_PAGES
    if (bytes >= kMinBytes)
      return static_cast<T*>(kScratch ? map_scratch(rounded(bytes)) : map(rounded(bytes)));
#endif
    return static_cast<T*>(::operator new(bytes));
  }

  void deallocate(T* p, std::size_t n) noexcept {
    using namespace huge_pages;
#ifdef SSCRF_HUGE_PAGES
    if (n * sizeof(T) >= kMinBytes) {
      if (kScratch)
        unmap_scratch(p, rounded(n * sizeof(T)));
      else
        munmap(p, rounded(n * sizeof(T)));
      return;
    }
#endif
    ::operator delete(p);
  }
};

template <class T, class U, bool kScratch>
bool operator==(const HugePageAllocator<T, kScratch>&, const HugePageAllocator<U, kScratch>&) {
  return true;
}
template <class T, class U, bool kScratch>
bool operator!=(const HugePageAllocator<T, kScratch>&, const HugePageAllocator<U, kScratch>&) {
  return false;
}

// Long-lived buffers read at random (the layout's row records and label ids).
template <class T>
using huge_page_vector = std::vector<T, HugePageAllocator<T>>;

// Buffers rebuilt every evaluation and read at random (padded weight rows,
// the chunk residual).
template <class T>
using scratch_vector = std::vector<T, HugePageAllocator<T, true>>;

}  // namespace sscrf
