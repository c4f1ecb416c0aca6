// The fork guard of the OpenMP helpers: a child forked after threads started runs on one (parallel.hpp).
#include "runtime/parallel.hpp"

#include <atomic>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace sscrf {

namespace {

std::atomic<bool> threads_started{false};
std::atomic<bool> forked{false};

#if defined(__unix__) || defined(__APPLE__)
void on_fork_child() {
  if (threads_started.load(std::memory_order_relaxed)) forked.store(true, std::memory_order_relaxed);
}
const bool fork_handler_registered = pthread_atfork(nullptr, nullptr, on_fork_child) == 0;
#endif

}  // namespace

void note_threads_started() noexcept {
  if (!threads_started.load(std::memory_order_relaxed))
    threads_started.store(true, std::memory_order_relaxed);
}

bool forked_after_threads() noexcept { return forked.load(std::memory_order_relaxed); }

}  // namespace sscrf
