// Entropy lattices H-alpha / H-beta and token and transition entropies of one
// chain (DESIGN.md kernel 4).
#pragma once

#include "lattice/chain.hpp"

namespace sscrf {

// Entropy lattices (DESIGN.md kernel 4), all from log-space conditionals:
//   node_entropy: [n], H(Y_t)
//   transition_entropy: [n], H(Y_t | Y_{t-1}) for t ≥ 1; [0] = 0
//   h_alpha: [n][S] or nullptr, entropy of y_0..y_{t-1} given y_t = b
//   h_beta:  [n][S] or nullptr, entropy of y_{t+1}..y_{n-1} given y_t = a
// Returns the sequence entropy H(Y | x) (a sum of non-negative terms).
double entropy_lattices(const Chain& c, Workspace& ws, double* node_entropy,
                        double* transition_entropy, double* h_alpha, double* h_beta);

}  // namespace sscrf
