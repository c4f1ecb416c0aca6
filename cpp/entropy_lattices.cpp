// Entropy lattices H-alpha / H-beta, token and transition entropies
// (DESIGN.md kernel 4; Mann & McCallum 2007 §4 with its recursions
// corrected), from log-space conditionals so that no probability is divided.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "covariance.hpp"
#include "scaled_lattice.hpp"

namespace sscrf {

namespace {

// Σ_i q_i (-log q_i + extra_i) for q = softmax(w); terms with q_i = 0 vanish.
inline double conditional_entropy(const double* w, const double* extra, int S) {
  const double norm = log_sum_exp(w, S);
  double h = 0.0;
  for (int i = 0; i < S; ++i) {
    const double log_q = w[i] - norm;
    const double q = std::exp(log_q);
    if (q > 0.0) h += q * (-log_q + (extra ? extra[i] : 0.0));
  }
  return h;
}

}  // namespace

double entropy_lattices(const Chain& c, Workspace& ws, double* node_entropy,
                        double* transition_entropy, double* h_alpha, double* h_beta) {
  if (c.node_mask || c.edge_mask) throw std::invalid_argument("entropy lattices do not support masks");
  const int64_t n = c.n;
  const int S = c.S;
  if (n == 0) return 0.0;
  fill_node_potentials(c, ws);
  log_space_forward(c, ws);
  Scratch& p = ws.cov_h;
  p.resize(static_cast<size_t>(n) * S);
  log_space_backward(c, ws, p.data(), nullptr, nullptr);
  const double* T = c.transitions;
  const double* np = ws.node_potential.data();
  Scratch& ha = ws.cov_forward;
  Scratch& hb = ws.cov_backward;
  ha.assign(static_cast<size_t>(n) * S, 0.0);
  hb.assign(static_cast<size_t>(n) * S, 0.0);
  ws.tmp.resize(S);
  double* w = ws.tmp.data();

  for (int64_t t = 0; t < n; ++t) {
    double h = 0.0;
    for (int b = 0; b < S; ++b) {
      const double q = p[t * S + b];
      if (q > 0.0) h -= q * std::log(q);
    }
    if (node_entropy) node_entropy[t] = h;
  }
  // Hα_t(b) = Σ_a q(a|b) (-log q(a|b) + Hα_{t-1}(a)), q(a|b) = p(y_{t-1}=a | y_t=b)
  for (int64_t t = 1; t < n; ++t) {
    const double* la = &ws.log_alpha[(t - 1) * S];
    for (int b = 0; b < S; ++b) {
      for (int a = 0; a < S; ++a) w[a] = la[a] + T[a * S + b];
      ha[t * S + b] = conditional_entropy(w, &ha[(t - 1) * S], S);
    }
  }
  // Hβ_t(a) = Σ_b q(b|a) (-log q(b|a) + Hβ_{t+1}(b)), q(b|a) = p(y_{t+1}=b | y_t=a);
  // H(Y_{t+1} | Y_t) = Σ_a p_t(a) Σ_b q(b|a) (-log q(b|a)).
  if (transition_entropy) transition_entropy[0] = 0.0;
  for (int64_t t = n - 2; t >= 0; --t) {
    const double* lb = &ws.log_beta[(t + 1) * S];
    double cond = 0.0;
    for (int a = 0; a < S; ++a) {
      for (int b = 0; b < S; ++b) w[b] = T[a * S + b] + np[(t + 1) * S + b] + lb[b];
      hb[t * S + a] = conditional_entropy(w, &hb[(t + 1) * S], S);
      cond += p[t * S + a] * conditional_entropy(w, nullptr, S);
    }
    if (transition_entropy) transition_entropy[t + 1] = cond;
  }
  double total = 0.0;
  for (int b = 0; b < S; ++b) {
    const double q = p[(n - 1) * S + b];
    if (q > 0.0) total += q * (-std::log(q) + ha[(n - 1) * S + b]);
  }
  if (h_alpha) std::copy(ha.begin(), ha.end(), h_alpha);
  if (h_beta) std::copy(hb.begin(), hb.end(), h_beta);
  return total;
}

}  // namespace sscrf
