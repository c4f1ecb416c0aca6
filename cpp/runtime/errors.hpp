// The one exception type of the core: a bad input, reported to Python as
// sscrf.errors.SscrfError (the module registers its translation once).
#pragma once

#include <stdexcept>

namespace sscrf {

// Every bad value the core refuses (ids out of range, shapes that disagree,
// masks that allow nothing, scores that overflow) is an InputError or a
// subclass, with a message that names the problem.
struct InputError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace sscrf
