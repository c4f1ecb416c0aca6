// Covariance kernels: expectations of additive scores and their gradients,
// entropy lattices, and Jiao et al.'s nested dynamic programme.
#pragma once

#include <cstdint>

#include "chain.hpp"

namespace sscrf {

// A score additive along the chain:
//   r(y) = Σ_t node[t][y_t] + Σ_{t≥1} edge_t[y_{t-1}][y_t],
// node: [n][S] or nullptr; edge: nullptr, one [S][S] matrix used at every
// position (edge_stride = 0) or [n-1][S][S] (edge_stride = S*S).
// With log_potentials set, r is the chain's own score s(y) (node = the
// emissions plus start/end, edge = the transitions) and node/edge are ignored.
struct AdditiveScore {
  const double* node = nullptr;
  const double* edge = nullptr;
  int64_t edge_stride = 0;
  bool log_potentials = false;
};

// E_p[r] and its gradient with respect to the chain's log-potentials,
// i.e. Cov_p[F, r] for the indicator features F (DESIGN.md kernel 3),
// times `scale` (a sentence's weight and sign, so that callers need no
// scratch matrix and no second pass over the outputs):
//   d_emissions: [n][S], scale · ∂E[r]/∂E[t][b] (written; may alias c.emissions)
//   d_transitions: [S][S], scale · ∂E[r]/∂T (added)
// ∂E[r]/∂start = d_emissions[0], ∂E[r]/∂end = d_emissions[n-1]. Writes log Z
// to *log_z when non-null. The chain must have no masks.
double expectation_gradient(const Chain& c, Workspace& ws, const AdditiveScore& r,
                            double* d_emissions, double* d_transitions, double* log_z,
                            double scale = 1.0);

// Entropy lattices (DESIGN.md kernel 4), all from log-space conditionals:
//   node_entropy: [n], H(Y_t)
//   transition_entropy: [n], H(Y_t | Y_{t-1}) for t ≥ 1; [0] = 0
//   h_alpha: [n][S] or nullptr, entropy of y_0..y_{t-1} given y_t = b
//   h_beta:  [n][S] or nullptr, entropy of y_{t+1}..y_{n-1} given y_t = a
// Returns the sequence entropy H(Y | x) (a sum of non-negative terms).
double entropy_lattices(const Chain& c, Workspace& ws, double* node_entropy,
                        double* transition_entropy, double* h_alpha, double* h_beta);

// Entropy H = log Z - E[s] and its gradient by Jiao et al. (2006) §3:
// -Cov[f, s] from quadratic feature expectations, computed with summary
// matrices M_{u+1, v-1} in a nested O(n² S³) programme. Reference only.
//   d_emissions: [n][S] (written), d_transitions: [S][S] (added)
double entropy_gradient_jiao(const Chain& c, Workspace& ws, double* d_emissions,
                             double* d_transitions);

// Jiao's pair marginals from the same summary matrices, for checking:
// out[a'][a][b'][b] = p(y_{u-1}=a', y_u=a, y_{v-1}=b', y_v=b), 1 ≤ u < v < n.
void jiao_pair_marginals(const Chain& c, Workspace& ws, int64_t u, int64_t v, double* out);

}  // namespace sscrf
