// Entropy lattices H-alpha / H-beta, token and transition entropies
// (DESIGN.md kernel 4; Mann & McCallum 2007 §4 with its recursions
// corrected), from log-space conditionals so that no probability is divided.
// Token and transition entropies alone (what the corpus decoder asks for)
// come from the scaled passes instead, when those can be trusted.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "lattice/entropy_lattices.hpp"
#include "lattice/scaled_passes.hpp"
#include "runtime/dense_kernels.hpp"

namespace sscrf {

namespace {

// -Σ_b p_b log p_b of a distribution over S labels, with the most probable
// label's p_b taken as 1 minus the others' sum: rounding leaves a p of 1 - ε
// a few units of eps off, and its term (about ε) would be rounding noise
// in a peaked marginal's entropy; its complement keeps the entropy accurate
// relative to its size.
inline double marginal_entropy(const double* p, int S) {
  int top = 0;
  for (int b = 1; b < S; ++b)
    if (p[b] > p[top]) top = b;
  double rest = 0.0, h = 0.0;
  for (int b = 0; b < S; ++b) {
    if (b == top || !(p[b] > 0.0)) continue;
    rest += p[b];
    h -= p[b] * std::log(p[b]);
  }
  if (rest < 1.0) h -= (1.0 - rest) * std::log1p(-rest);
  return h;
}

// Σ_b q_b (-log q_b) for q = softmax(w), w [ld] with -inf past S (and
// wherever q is 0); w is overwritten. With w's largest entry at b*,
// e_b = exp(w_b - w_b*) (e_b* = 1) and r = Σ_{b≠b*} e_b:
//   H = log1p(r) + Σ_{b≠b*} e_b (w_b* - w_b) / (1 + r),
// two non-negative terms, so a nearly certain q (r ≪ eps) keeps an entropy
// accurate relative to its size, which log(Σ_b e_b) would round away.
__attribute__((always_inline)) inline double softmax_entropy(double* w, int S, int ld) {
  int top = 0;
  for (int b = 1; b < S; ++b)
    if (w[b] > w[top]) top = b;
  const double m = w[top];
  if (m == -std::numeric_limits<double>::infinity()) return 0.0;
  double gap[kBlock * 16];  // w_b* - w_b, ld <= kBlock * 16 lanes at a time
  double rest = 0.0, spread = 0.0;
  for (int b0 = 0; b0 < ld; b0 += kBlock * 16) {
    const int lanes = std::min(ld - b0, kBlock * 16);
    for (int b = 0; b < lanes; ++b) gap[b] = m - w[b0 + b];
    exp_shifted_row(w + b0, lanes, m);
    for (int b = 0; b < lanes; ++b) {
      if (b0 + b == top || !(w[b0 + b] > 0.0)) continue;
      rest += w[b0 + b];
      spread += w[b0 + b] * gap[b];
    }
  }
  return std::log1p(rest) + spread / (1.0 + rest);
}

// softmax_entropy of w [S] (copied into the padded row `row` [ld]); writes
// Σ_i q_i extra_i to *mean.
__attribute__((always_inline)) inline double softmax_entropy_of(const double* w, int S, int ld,
                                                                double* row, const double* extra,
                                                                double* mean) {
  std::copy(w, w + S, row);
  std::fill(row + S, row + ld, -std::numeric_limits<double>::infinity());
  const double h = softmax_entropy(row, S, ld);
  double total = 0.0, weighted = 0.0;  // row holds exp(w_i - max w) now
  for (int i = 0; i < S; ++i) {
    total += row[i];
    weighted += row[i] * extra[i];
  }
  *mean = total > 0.0 ? weighted / total : 0.0;
  return h;
}

// Token entropies H(Y_t), transition entropies H(Y_t | Y_{t-1}) and their
// sum H(Y | x) (the chain rule), from the scaled passes: O(n S²)
// multiply-adds and 2S logs per token, where the log-space lattices take
// several exps per (a, b) per token. With q(b|a) = p(y_t=b | y_{t-1}=a) =
// factor(a,b) g_t(b) / beta_{t-1}(a) (scaled_lattice.hpp) and
//   w(a,b) = log(factor(a,b) g_t(b)) = T(a,b) + u(b),
//   u(b) = node_t(b) - m_t - log s_t + log beta_t(b)   (col_max cancels),
// a row's entropy times beta_{t-1}(a) is
//   beta_{t-1}(a) log beta_{t-1}(a) - Σ_b factor(a,b) g_t(b) w(a,b)
//     = beta_{t-1}(a) log beta_{t-1}(a) - (Σ_b scored(a,b) g_t(b) + Σ_b factor(a,b) g_t(b) u(b)),
// and H(Y_t | Y_{t-1}) is its sum weighted by alpha_{t-1}(a). That
// difference is rounded to about eps times the size of the log-potentials:
// a token whose sum is not well above that bound is summed again row by row
// from the log-space conditionals (log q(b|a) = w(a,b) - log Σ_b' exp w(a,b')),
// so that a nearly certain transition keeps its small entropy (with peaked
// models, most tokens). Every entropy is a sum of non-negative terms.
// Returns false, with nothing written, when the scaled numbers cannot be
// trusted.
SSCRF_SIMD_CLONES
bool scaled_entropies(const Chain& c, Workspace& ws, double* node_entropy,
                      double* transition_entropy, double* entropy) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  // a token's sum is trusted when above 2^20 times its rounding bound
  constexpr double kTrustedMargin = 1048576.0;
  const int64_t n = c.n;
  const int S = c.S;
  const TransitionFactors& f = factors_of(c, ws);
  if (!scaled_forward(c, f, ws) || !scaled_backward(c, f, ws)) return false;
  const int ld = f.ld;
  const double* np = ws.node_potential.data();
  ws.tmp.assign(6 * static_cast<size_t>(ld), 0.0);
  double* log_beta_prev = ws.tmp.data();  // log beta_{t-1}, 0 where beta is 0
  double* log_beta = log_beta_prev + ld;
  double* u = log_beta + ld;  // -inf where g_t is 0
  double* y = u + ld;         // g_t ∘ u, 0 where g_t is 0
  double* v = y + ld;
  double* w = v + ld;
  ws.cov_node.resize(ld);
  double* p = ws.cov_node.data();  // node marginals of token t
  double total = 0.0, largest_log_beta_prev = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    const double* alpha = &ws.alpha[t * ld];
    const double* beta = &ws.beta[t * ld];
    double largest_log_beta = 0.0;
    for (int b = 0; b < S; ++b) {
      p[b] = alpha[b] * beta[b];
      log_beta[b] = beta[b] > 0.0 ? std::log(beta[b]) : 0.0;
      if (p[b] > 0.0) largest_log_beta = std::max(largest_log_beta, std::fabs(log_beta[b]));
    }
    const double h = marginal_entropy(p, S);
    if (node_entropy) node_entropy[t] = h;
    if (t == 0) {
      total = h;
      if (transition_entropy) transition_entropy[0] = 0.0;
    } else {
      const double* g = &ws.g[t * ld];
      const double shift = ws.row_max[t] + std::log(ws.scale[t]);
      double largest_u = 0.0;
      for (int b = 0; b < ld; ++b) {
        if (b < S && g[b] > 0.0) {
          u[b] = np[t * S + b] - shift + log_beta[b];
          y[b] = g[b] * u[b];
          largest_u = std::max(largest_u, std::fabs(u[b]));
        } else {
          u[b] = kNegInf;
          y[b] = 0.0;
        }
      }
      vector_matrix_sum(g, f.scored_t.data(), y, f.factor_t.data(), S, ld, v);
      const double* alpha_prev = &ws.alpha[(t - 1) * ld];
      const double* beta_prev = &ws.beta[(t - 1) * ld];
      double conditional = 0.0;
      for (int a = 0; a < S; ++a) {
        if (!(alpha_prev[a] > 0.0 && beta_prev[a] > 0.0)) continue;
        const double term = beta_prev[a] * log_beta_prev[a] - v[a];
        if (term > 0.0) conditional += alpha_prev[a] * term;
      }
      const double bound = 4.0 * S * std::numeric_limits<double>::epsilon() *
                           (largest_log_beta_prev + f.largest_magnitude + largest_u);
      if (!(conditional > kTrustedMargin * bound)) {
        conditional = 0.0;
        for (int a = 0; a < S; ++a) {
          const double pa = alpha_prev[a] * beta_prev[a];
          if (!(pa > 0.0)) continue;
          const double* Ta = &f.log_padded[a * ld];
          for (int b = 0; b < ld; ++b) w[b] = Ta[b] + u[b];
          conditional += pa * softmax_entropy(w, S, ld);
        }
      }
      if (transition_entropy) transition_entropy[t] = conditional;
      total += conditional;
    }
    std::swap(log_beta_prev, log_beta);
    largest_log_beta_prev = largest_log_beta;
  }
  *entropy = total;
  return true;
}

}  // namespace

double entropy_lattices(const Chain& c, Workspace& ws, double* node_entropy,
                        double* transition_entropy, double* h_alpha, double* h_beta) {
  if (c.node_mask || c.edge_mask) throw InputError("entropy lattices do not support masks");
  const int64_t n = c.n;
  const int S = c.S;
  if (n == 0) return 0.0;
  fill_node_potentials(c, ws);
  if (!h_alpha && !h_beta) {
    double entropy;
    if (scaled_entropies(c, ws, node_entropy, transition_entropy, &entropy)) return entropy;
  }
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
  const int ld = padded_width(S);
  ws.tmp.resize(S + static_cast<size_t>(ld));
  double* w = ws.tmp.data();
  double* row = w + S;

  // Entropies from the log-space conditionals, each with its largest
  // probability's term taken from the others' (marginal_entropy,
  // softmax_entropy), so nearly certain distributions keep their digits.
  for (int64_t t = 0; t < n; ++t) {
    const double h = marginal_entropy(&p[t * S], S);
    if (node_entropy) node_entropy[t] = h;
  }
  // Hα_t(b) = Σ_a q(a|b) (-log q(a|b) + Hα_{t-1}(a)), q(a|b) = p(y_{t-1}=a | y_t=b)
  for (int64_t t = 1; t < n; ++t) {
    const double* la = &ws.log_alpha[(t - 1) * S];
    for (int b = 0; b < S; ++b) {
      for (int a = 0; a < S; ++a) w[a] = la[a] + T[a * S + b];
      double inherited;
      const double h = softmax_entropy_of(w, S, ld, row, &ha[(t - 1) * S], &inherited);
      ha[t * S + b] = h + inherited;
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
      double inherited;
      const double h = softmax_entropy_of(w, S, ld, row, &hb[(t + 1) * S], &inherited);
      hb[t * S + a] = h + inherited;
      cond += p[t * S + a] * h;
    }
    if (transition_entropy) transition_entropy[t + 1] = cond;
  }
  // H = H(Y_{n-1}) + Σ_b p_{n-1}(b) Hα_{n-1}(b)
  double total = marginal_entropy(&p[(n - 1) * S], S);
  for (int b = 0; b < S; ++b) total += p[(n - 1) * S + b] * ha[(n - 1) * S + b];
  if (h_alpha) std::copy(ha.begin(), ha.end(), h_alpha);
  if (h_beta) std::copy(hb.begin(), hb.end(), h_beta);
  return total;
}

}  // namespace sscrf
