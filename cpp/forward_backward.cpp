// Forward-backward over one chain: scaled probabilities on the fast path,
// log space when scaling cannot represent the chain (DESIGN.md kernel 1).
#include <algorithm>
#include <cmath>
#include <limits>

#include "fast_math.hpp"
#include "lattice.hpp"

namespace sscrf {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The scaled pass is trusted only while every label that some allowed
// labeling reaches keeps a forward value of at least kMinAlpha (alpha is
// normalised per token, so this is a ratio to the token's total). Each
// value is a sum of non-negative products; a product that underflowed is
// below 2.2e-308, so what it loses is under 1e-17 of any value we keep. A
// reachable label below the bound (an allowed potential whose exp
// underflowed, or a path squeezed below the bound) sends the whole
// sequence to log space, where nothing underflows.
constexpr double kMinAlpha = 1e-290;

// Node marginals of a consistent scaled pass sum to 1 up to rounding; a
// larger gap means alpha or beta overflowed or lost the mass that matters.
constexpr double kMarginalSumTolerance = 1e-8;

// node_potential[t][b] = E[t][b] + start[b] (t = 0) + end[b] (t = n-1),
// -inf where the node mask forbids b.
void fill_node_potentials(const Chain& c, Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S;
  ws.node_potential.resize(static_cast<size_t>(n) * S);
  double* np = ws.node_potential.data();
  std::copy(c.emissions, c.emissions + n * S, np);
  for (int b = 0; b < S; ++b) {
    if (c.start) np[b] += c.start[b];
    if (c.end) np[(n - 1) * S + b] += c.end[b];
  }
  if (c.node_mask) {
    for (int64_t i = 0; i < n * S; ++i)
      if (!c.node_mask[i]) np[i] = kNegInf;
  }
}

inline double log_sum_exp(const double* v, int S) {
  double m = kNegInf;
  for (int i = 0; i < S; ++i) m = std::max(m, v[i]);
  if (m == kNegInf) return kNegInf;
  double s = 0.0;
  for (int i = 0; i < S; ++i) s += std::exp(v[i] - m);
  return m + std::log(s);
}

const TransitionFactors& factors_of(const Chain& c, Workspace& ws) {
  if (c.factors) return *c.factors;
  ws.own_factors = TransitionFactors(c.transitions, c.S);
  return ws.own_factors;
}

// Scaled forward pass: alpha[t] normalised to sum 1, scale[t] the
// normaliser, psi[t][b] = exp(potential - row_max[t]). Returns false when a
// scale sum collapses (or a row allows nothing), leaving log space to decide.
bool scaled_forward(const Chain& c, const TransitionFactors& f, Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S;
  ws.psi.resize(static_cast<size_t>(n) * S);
  ws.alpha.resize(static_cast<size_t>(n) * S);
  ws.row_max.resize(n);
  ws.scale.resize(n);
  ws.tmp.resize(S);
  ws.reachable.resize(2 * static_cast<size_t>(S));
  const double* np = ws.node_potential.data();
  const double* col_max = f.col_max.data();
  double* acc = ws.tmp.data();
  for (int64_t t = 0; t < n; ++t) {
    // The transition factors were divided by exp(col_max[b]); put it back
    // on the node so psi[t][b] * factor[a][b] = exp(T[a][b] + node - m).
    double* psi = &ws.psi[t * S];
    double m = kNegInf;
    for (int b = 0; b < S; ++b) {
      psi[b] = np[t * S + b] + (t > 0 ? col_max[b] : 0.0);
      m = std::max(m, psi[b]);
    }
    if (m == kNegInf) return false;
#pragma omp simd
    for (int b = 0; b < S; ++b) psi[b] = exp_nonpositive(psi[b] - m);
    ws.row_max[t] = m;

    // reachable[b]: the masks allow some labeling of tokens 0..t ending in b.
    uint8_t* reach = &ws.reachable[(t % 2) * S];
    const uint8_t* reach_prev = &ws.reachable[((t + 1) % 2) * S];
    const uint8_t* em = (c.edge_mask && t > 0) ? c.edge_mask + (t - 1) * S * S : nullptr;
    for (int b = 0; b < S; ++b) {
      bool r = np[t * S + b] != kNegInf;
      if (r && em) {
        r = false;
        for (int a = 0; a < S && !r; ++a) r = reach_prev[a] && em[a * S + b];
      }
      reach[b] = r;
    }

    double* alpha = &ws.alpha[t * S];
    if (t == 0) {
      for (int b = 0; b < S; ++b) alpha[b] = psi[b];
    } else {
      // alpha'_t(b) = psi_t(b) * Σ_a alpha_{t-1}(a) * factor_t(a, b)
      const double* prev = &ws.alpha[(t - 1) * S];
      std::fill(acc, acc + S, 0.0);
      for (int a = 0; a < S; ++a) {
        const double pa = prev[a];
        const double* fa = &f.factor[a * S];
        if (em) {
          const uint8_t* ema = em + a * S;
          for (int b = 0; b < S; ++b) acc[b] += ema[b] ? pa * fa[b] : 0.0;
        } else {
#pragma omp simd
          for (int b = 0; b < S; ++b) acc[b] += pa * fa[b];
        }
      }
      for (int b = 0; b < S; ++b) alpha[b] = psi[b] * acc[b];
    }
    double s = 0.0;
    bool any = false;
    for (int b = 0; b < S; ++b) {
      s += alpha[b];
      if (reach[b]) {
        any = true;
        if (!(alpha[b] >= kMinAlpha)) return false;
      }
    }
    if (!any) return false;
    const double inv = 1.0 / s;
    for (int b = 0; b < S; ++b) alpha[b] *= inv;
    ws.scale[t] = s;
  }
  return true;
}

double scaled_log_z(const Workspace& ws, int64_t n) {
  double log_z = 0.0;
  for (int64_t t = 0; t < n; ++t) log_z += ws.row_max[t] + std::log(ws.scale[t]);
  return log_z;
}

// Scaled backward pass and marginals; false when they fail the sum-to-one
// certificate (then nothing has been added to edge_sum).
bool scaled_backward(const Chain& c, const TransitionFactors& f, Workspace& ws,
                     double* node, double* edge, double* edge_sum) {
  const int64_t n = c.n;
  const int S = c.S;
  ws.beta.resize(static_cast<size_t>(n) * S);
  ws.tmp.resize(static_cast<size_t>(S) + (edge_sum ? static_cast<size_t>(S) * S : 0));
  double* g = ws.tmp.data();
  double* local_edge_sum = edge_sum ? ws.tmp.data() + S : nullptr;
  if (local_edge_sum) std::fill(local_edge_sum, local_edge_sum + S * S, 0.0);
  std::fill(&ws.beta[(n - 1) * S], &ws.beta[(n - 1) * S] + S, 1.0);
  // Without an edge mask or full edge output, Σ_t p_t(a, b) factors as
  // factor(a, b) · Σ_t alpha_{t-1}(a) g_t(b): accumulate the outer products
  // and multiply by the factors once.
  const bool fast = !c.edge_mask && !edge;
  double* outer = ws.edge_scratch.data();
  if (fast && local_edge_sum) {
    ws.edge_scratch.assign(static_cast<size_t>(S) * S, 0.0);
    outer = ws.edge_scratch.data();
  }
  for (int64_t t = n - 1; t >= 1; --t) {
    // g(b) = psi_t(b) beta_t(b) / scale_t;  beta_{t-1}(a) = Σ_b factor_t(a,b) g(b)
    const double* psi = &ws.psi[t * S];
    const double* beta = &ws.beta[t * S];
    const double inv = 1.0 / ws.scale[t];
    for (int b = 0; b < S; ++b) g[b] = psi[b] * beta[b] * inv;
    double* beta_prev = &ws.beta[(t - 1) * S];
    const double* alpha_prev = &ws.alpha[(t - 1) * S];
    if (fast) {
      // beta_{t-1} = Σ_b g(b) · factorᵀ[b]: independent accumulators, no reduction chain
      std::fill(beta_prev, beta_prev + S, 0.0);
      for (int b = 0; b < S; ++b) {
        const double gb = g[b];
        const double* ft = &f.factor_t[b * S];
#pragma omp simd
        for (int a = 0; a < S; ++a) beta_prev[a] += gb * ft[a];
      }
      if (local_edge_sum) {
        for (int a = 0; a < S; ++a) {
          const double pa = alpha_prev[a];
          double* row = outer + a * S;
#pragma omp simd
          for (int b = 0; b < S; ++b) row[b] += pa * g[b];
        }
      }
      continue;
    }
    const uint8_t* em = c.edge_mask ? c.edge_mask + (t - 1) * S * S : nullptr;
    double* edge_t = edge ? edge + (t - 1) * S * S : nullptr;
    for (int a = 0; a < S; ++a) {
      const double* fa = &f.factor[a * S];
      double sum = 0.0;
      for (int b = 0; b < S; ++b) sum += (em && !em[a * S + b]) ? 0.0 : fa[b] * g[b];
      beta_prev[a] = sum;
      // p(y_{t-1}=a, y_t=b) = alpha_{t-1}(a) factor_t(a,b) g(b)
      const double pa = alpha_prev[a];
      for (int b = 0; b < S; ++b) {
        const double p = (em && !em[a * S + b]) ? 0.0 : pa * fa[b] * g[b];
        if (edge_t) edge_t[a * S + b] = p;
        if (local_edge_sum) local_edge_sum[a * S + b] += p;
      }
    }
  }
  if (fast && local_edge_sum) {
    for (int i = 0; i < S * S; ++i) local_edge_sum[i] = outer[i] * f.factor[i];
  }
  for (int64_t t = 0; t < n; ++t) {
    const double* alpha = &ws.alpha[t * S];
    const double* beta = &ws.beta[t * S];
    double total = 0.0;
    for (int b = 0; b < S; ++b) total += alpha[b] * beta[b];
    if (!(std::fabs(total - 1.0) <= kMarginalSumTolerance)) return false;
    if (node) {
      double* out = node + t * S;
      for (int b = 0; b < S; ++b) out[b] = alpha[b] * beta[b];
    }
  }
  if (edge_sum) {
    for (int i = 0; i < S * S; ++i) edge_sum[i] += local_edge_sum[i];
  }
  return true;
}

// Log-space forward pass; ws.alpha[t] holds log alpha normalised so that
// its log-sum-exp is 0 (magnitudes stay small on long chains). Returns log Z.
double log_space_forward(const Chain& c, Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S;
  const double* np = ws.node_potential.data();
  const double* T = c.transitions;
  ws.alpha.resize(static_cast<size_t>(n) * S);
  ws.tmp.resize(S);
  double* v = ws.tmp.data();
  double log_z = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    double* la = &ws.alpha[t * S];
    if (t == 0) {
      for (int b = 0; b < S; ++b) la[b] = np[b];
    } else {
      const double* prev = &ws.alpha[(t - 1) * S];
      const uint8_t* em = c.edge_mask ? c.edge_mask + (t - 1) * S * S : nullptr;
      for (int b = 0; b < S; ++b) {
        for (int a = 0; a < S; ++a)
          v[a] = (em && !em[a * S + b]) ? kNegInf : prev[a] + T[a * S + b];
        la[b] = np[t * S + b] + log_sum_exp(v, S);
      }
    }
    const double norm = log_sum_exp(la, S);
    if (norm == kNegInf) throw NoLabeling("the masks allow no labeling of this sequence");
    for (int b = 0; b < S; ++b) la[b] -= norm;
    log_z += norm;
  }
  return log_z;
}

// Log-space backward pass (log beta normalised per token) and marginals,
// each normalised over its own token so that rounding cannot accumulate.
void log_space_backward(const Chain& c, Workspace& ws, double* node, double* edge,
                        double* edge_sum) {
  const int64_t n = c.n;
  const int S = c.S;
  const double* np = ws.node_potential.data();
  const double* T = c.transitions;
  ws.beta.resize(static_cast<size_t>(n) * S);
  ws.tmp.resize(static_cast<size_t>(S) * S);
  double* v = ws.tmp.data();
  std::fill(&ws.beta[(n - 1) * S], &ws.beta[(n - 1) * S] + S, 0.0);
  for (int64_t t = n - 1; t >= 1; --t) {
    const uint8_t* em = c.edge_mask ? c.edge_mask + (t - 1) * S * S : nullptr;
    const double* lb = &ws.beta[t * S];
    double* lb_prev = &ws.beta[(t - 1) * S];
    double top = kNegInf;
    for (int a = 0; a < S; ++a) {
      for (int b = 0; b < S; ++b)
        v[b] = (em && !em[a * S + b]) ? kNegInf : T[a * S + b] + np[t * S + b] + lb[b];
      lb_prev[a] = log_sum_exp(v, S);
      top = std::max(top, lb_prev[a]);
    }
    if (top != kNegInf)
      for (int a = 0; a < S; ++a) lb_prev[a] -= top;
    if (edge || edge_sum) {
      // p(a, b) ∝ exp(la_{t-1}(a) + T(a,b) + node_t(b) + lb_t(b))
      const double* la_prev = &ws.alpha[(t - 1) * S];
      for (int a = 0; a < S; ++a)
        for (int b = 0; b < S; ++b)
          v[a * S + b] = (em && !em[a * S + b])
                             ? kNegInf
                             : la_prev[a] + T[a * S + b] + np[t * S + b] + lb[b];
      const double norm = log_sum_exp(v, S * S);
      for (int i = 0; i < S * S; ++i) {
        const double p = std::exp(v[i] - norm);
        if (edge) edge[(t - 1) * S * S + i] = p;
        if (edge_sum) edge_sum[i] += p;
      }
    }
  }
  if (node) {
    ws.tmp.resize(S);
    double* u = ws.tmp.data();
    for (int64_t t = 0; t < n; ++t) {
      for (int b = 0; b < S; ++b) u[b] = ws.alpha[t * S + b] + ws.beta[t * S + b];
      const double norm = log_sum_exp(u, S);
      for (int b = 0; b < S; ++b) node[t * S + b] = std::exp(u[b] - norm);
    }
  }
}

}  // namespace

TransitionFactors::TransitionFactors(const double* transitions, int S_)
    : S(S_), factor(static_cast<size_t>(S_) * S_), col_max(S_, kNegInf) {
  for (int a = 0; a < S; ++a)
    for (int b = 0; b < S; ++b) col_max[b] = std::max(col_max[b], transitions[a * S + b]);
  for (int a = 0; a < S; ++a)
    for (int b = 0; b < S; ++b)
      factor[a * S + b] = exp_nonpositive(transitions[a * S + b] - col_max[b]);
  factor_t.resize(factor.size());
  for (int a = 0; a < S; ++a)
    for (int b = 0; b < S; ++b) factor_t[b * S + a] = factor[a * S + b];
}

double forward_backward(const Chain& c, Workspace& ws, double* node, double* edge,
                        double* edge_sum) {
  if (c.n == 0) return 0.0;
  fill_node_potentials(c, ws);
  const TransitionFactors& f = factors_of(c, ws);
  if (scaled_forward(c, f, ws)) {
    const double log_z = scaled_log_z(ws, c.n);
    if (scaled_backward(c, f, ws, node, edge, edge_sum)) return log_z;
  }
  const double log_z = log_space_forward(c, ws);
  log_space_backward(c, ws, node, edge, edge_sum);
  return log_z;
}

double log_partition(const Chain& c, Workspace& ws) {
  if (c.n == 0) return 0.0;
  fill_node_potentials(c, ws);
  const TransitionFactors& f = factors_of(c, ws);
  if (scaled_forward(c, f, ws)) return scaled_log_z(ws, c.n);
  return log_space_forward(c, ws);
}

double labeling_score(const Chain& c, const int32_t* y) {
  if (c.n == 0) return 0.0;
  const int S = c.S;
  double s = 0.0;
  for (int64_t t = 0; t < c.n; ++t) {
    s += c.emissions[t * S + y[t]];
    if (t > 0) s += c.transitions[y[t - 1] * S + y[t]];
  }
  if (c.start) s += c.start[y[0]];
  if (c.end) s += c.end[y[c.n - 1]];
  return s;
}

}  // namespace sscrf
