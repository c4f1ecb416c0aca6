// Interrupts for long kernels: a kernel whose cost grows faster than its
// input (Jiao's O(n² S³) programme) polls between units of work, so that
// Ctrl-C answers within a fraction of a second. The binding installs the
// poll (it runs Python's signal handlers); without one, polling does nothing.
#pragma once

#include <atomic>

namespace sscrf {

// Returns normally, or throws what the installed poll throws (the binding's
// throws the pending KeyboardInterrupt).
using InterruptPoll = void (*)();
inline std::atomic<InterruptPoll> interrupt_poll{nullptr};

inline void poll_interrupt() {
  if (InterruptPoll f = interrupt_poll.load(std::memory_order_relaxed)) f();
}

}  // namespace sscrf
