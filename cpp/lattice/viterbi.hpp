// Viterbi decoding of one chain (DESIGN.md kernel 2).
#pragma once

#include <cstdint>

#include "lattice/chain.hpp"

namespace sscrf {

// Best labeling into path [n]; returns its score. Ties go to the lower
// label index. Throws NoLabeling when the masks allow nothing.
double viterbi(const Chain& chain, Workspace& ws, int32_t* path);

}  // namespace sscrf
