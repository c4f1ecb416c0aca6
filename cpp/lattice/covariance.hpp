// The covariance kernel (DESIGN.md kernel 3): the expectation of a score
// additive along the chain and its gradient Cov_p[F, r], and the entropy
// gradient it gives.
#pragma once

#include <cstdint>

#include "lattice/chain.hpp"

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

// The entropy H(Y | x) = log Z − E[s] and its gradient ∂H/∂θ = −Cov[F, s]
// (the covariance kernel with r = s, E[F] cancelling), times `scale`:
//   d_emissions: [n][S] (written; may alias c.emissions), d_transitions: [S][S] (added)
// Returns H unscaled; 0 for an empty chain (then nothing is written).
inline double entropy_gradient(const Chain& c, Workspace& ws, double* d_emissions,
                               double* d_transitions, double scale = 1.0) {
  if (c.n == 0) return 0.0;
  AdditiveScore score;
  score.log_potentials = true;
  double log_z;
  const double expected =
      expectation_gradient(c, ws, score, d_emissions, d_transitions, &log_z, -scale);
  return log_z - expected;
}

}  // namespace sscrf
