// Large scratch blocks kept from one evaluation to the next.
//
// An evaluation allocates the same large scratch every time (a chunk's
// residual rows, the padded weight rows, the lattice buffers of long
// sequences) and frees it at the end. Returned to the system, each block
// comes back as fresh pages whenever malloc maps it anew (glibc does for
// every block over 32 MiB): the kernel zeroes every page on its first
// touch, and unmapping it in a multi-threaded process interrupts every core
// that runs one of its threads to flush its TLB (up to 1.5x the time of a
// likelihood call whose scratch is tens of MB).
// So freed blocks of at least kCachedBlockBytes wait here, in one
// process-wide list (a block freed by one thread serves the next call on
// any thread), up to kMaxCachedBytes; release_cached_blocks() hands them
// all back (the trainer calls it when a fit ends).
#pragma once

#include <cstddef>

namespace sscrf {

// Blocks below this go straight to operator new / delete (malloc keeps
// them in its arenas).
constexpr std::size_t kCachedBlockBytes = std::size_t{64} << 10;
// The list keeps at most this many bytes (oldest blocks freed first).
constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;

// At least `bytes` bytes, starting on a cache line: a cached block of
// `bytes` to 2·`bytes` when there is one (the smallest), else a new one.
// Throws std::bad_alloc.
void* allocate_block(std::size_t bytes);

// Gives back a block from allocate_block (any size: the block records its
// own); nullptr is ignored.
void free_block(void* p) noexcept;

// Frees every cached block; returns how many bytes that was.
std::size_t release_cached_blocks() noexcept;

// Bytes held in the list now (blocks waiting for reuse, not those in use).
std::size_t cached_block_bytes() noexcept;

}  // namespace sscrf
