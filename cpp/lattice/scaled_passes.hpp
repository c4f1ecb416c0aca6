// The scaled-probability forward and backward passes, shared by
// forward-backward and the covariance kernel (internal header).
//
// After scaled_forward:  ws.alpha[t] (stride ld) sums to 1, ws.scale[t] is
// its normaliser, ws.psi[t][b] = exp(node potential (+ col_max) - row_max[t]),
// so that log Z = Σ_t row_max[t] + log scale[t]. After scaled_backward:
// ws.beta[t] (stride ld) with Σ_b alpha_t(b) beta_t(b) = 1, node marginals
// alpha_t(b) beta_t(b), and ws.g[t][b] = psi_t(b) beta_t(b) / scale_t for
// t >= 1, so that p(y_{t-1}=a, y_t=b) = alpha_{t-1}(a) factor(a,b) g_t(b).
// Either returns false when the scaled numbers cannot be trusted; the caller
// then recomputes in log space.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "lattice/chain.hpp"

namespace sscrf {

// Copies emissions + start/end into ws.node_potential, -inf where masked.
void fill_node_potentials(const Chain& c, Workspace& ws);
const TransitionFactors& factors_of(const Chain& c, Workspace& ws);
bool scaled_forward(const Chain& c, const TransitionFactors& f, Workspace& ws);
double scaled_log_z(const Workspace& ws, int64_t n);
bool scaled_backward(const Chain& c, const TransitionFactors& f, Workspace& ws);

// Log-space passes, used when the scaled ones cannot be trusted.
// log_space_forward fills ws.log_alpha[t] (stride S) normalised to
// log-sum-exp 0 and returns log Z (throws NoLabeling when nothing is
// allowed); log_space_backward fills ws.log_beta likewise and optionally
// node marginals [n][S], edge marginals [n-1][S][S] and their sum [S][S] (added).
double log_space_forward(const Chain& c, Workspace& ws);
void log_space_backward(const Chain& c, Workspace& ws, double* node, double* edge,
                        double* edge_sum);

inline double log_sum_exp(const double* v, int S) {
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < S; ++i) m = std::max(m, v[i]);
  if (m == -std::numeric_limits<double>::infinity()) return m;
  double s = 0.0;
  for (int i = 0; i < S; ++i) s += std::exp(v[i] - m);
  return m + std::log(s);
}

}  // namespace sscrf
