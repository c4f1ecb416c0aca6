// Forward-backward over one chain (DESIGN.md kernel 1): log Z, node and edge
// marginals, and the score of a given labeling.
#pragma once

#include <cstdint>

#include "lattice/chain.hpp"

namespace sscrf {

// Forward-backward. Returns log Z over the labelings the masks allow.
//   node:     [n][S] node marginals p(y_t = b), or nullptr
//   edge:     [n-1][S][S] edge marginals p(y_{t-1} = a, y_t = b), or nullptr
//   edge_sum: [S][S], Σ_t of the edge marginals is ADDED here, or nullptr
// The emissions are read before any output is written, so `node` may alias
// `chain.emissions`. Throws NoLabeling when the masks allow nothing. A node
// mask that pins tokens to one label splits the lattice there (see
// forward_backward.cpp): only the runs of other tokens take O(S²) per token.
double forward_backward(const Chain& chain, Workspace& ws, double* node,
                        double* edge, double* edge_sum);

// log Z only (a forward pass).
double log_partition(const Chain& chain, Workspace& ws);

// Score of the labeling y [n] (no masks are consulted).
double labeling_score(const Chain& chain, const int32_t* y);

}  // namespace sscrf
