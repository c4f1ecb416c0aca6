// Forward-backward over one chain: scaled probabilities on the fast path,
// log space when scaling cannot represent the chain (DESIGN.md kernel 1).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lattice/forward_backward.hpp"
#include "lattice/scaled_passes.hpp"
#include "runtime/dense_kernels.hpp"

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
// larger gap means beta overflowed.
constexpr double kMarginalSumTolerance = 1e-8;

}  // namespace

// Log-space forward pass; ws.log_alpha[t] is normalised so that its
// log-sum-exp is 0 (magnitudes stay small on long chains). Returns log Z.
double log_space_forward(const Chain& c, Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S;
  const double* np = ws.node_potential.data();
  const double* T = c.transitions;
  ws.log_alpha.resize(static_cast<size_t>(n) * S);
  ws.tmp.resize(S);
  double* v = ws.tmp.data();
  double log_z = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    double* la = &ws.log_alpha[t * S];
    if (t == 0) {
      for (int b = 0; b < S; ++b) la[b] = np[b];
    } else {
      const double* prev = &ws.log_alpha[(t - 1) * S];
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
  ws.log_beta.resize(static_cast<size_t>(n) * S);
  ws.tmp.resize(static_cast<size_t>(S) * S);
  double* v = ws.tmp.data();
  std::fill(&ws.log_beta[(n - 1) * S], &ws.log_beta[(n - 1) * S] + S, 0.0);
  for (int64_t t = n - 1; t >= 1; --t) {
    const uint8_t* em = c.edge_mask ? c.edge_mask + (t - 1) * S * S : nullptr;
    const double* lb = &ws.log_beta[t * S];
    double* lb_prev = &ws.log_beta[(t - 1) * S];
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
      const double* la_prev = &ws.log_alpha[(t - 1) * S];
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
      for (int b = 0; b < S; ++b) u[b] = ws.log_alpha[t * S + b] + ws.log_beta[t * S + b];
      const double norm = log_sum_exp(u, S);
      for (int b = 0; b < S; ++b) node[t * S + b] = std::exp(u[b] - norm);
    }
  }
}

namespace {

// Σ_t p_t(a, b) from a trusted scaled pass, added to edge_sum [S][S].
SSCRF_SIMD_CLONES
void scaled_edge_sum(const Chain& c, const TransitionFactors& f, Workspace& ws,
                     double* edge_sum) {
  const int64_t n = c.n;
  const int S = c.S, ld = f.ld;
  if (!c.edge_mask) {
    // Σ_t alpha_{t-1}(a) factor(a,b) g_t(b) = factor(a,b) · (Σ_t alpha_{t-1} ⊗ g_t)(a,b)
    ws.outer.resize(static_cast<size_t>(S) * ld);
    transposed_product(ws.alpha.data(), ws.g.data() + ld, n - 1, S, ld, ws.outer.data());
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) edge_sum[a * S + b] += ws.outer[a * ld + b] * f.factor[a * ld + b];
    return;
  }
  for (int64_t t = 1; t < n; ++t) {
    const uint8_t* em = c.edge_mask + (t - 1) * S * S;
    const double* alpha_prev = &ws.alpha[(t - 1) * ld];
    const double* g = &ws.g[t * ld];
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b)
        if (em[a * S + b]) edge_sum[a * S + b] += alpha_prev[a] * f.factor[a * ld + b] * g[b];
  }
}

}  // namespace

void fill_node_potentials(const Chain& c, Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S;
  // kBlock entries more: scaled_forward reads the last row a vec4 at a time
  ws.node_potential.resize(static_cast<size_t>(n) * S + kBlock);
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

const TransitionFactors& factors_of(const Chain& c, Workspace& ws) {
  if (c.factors) return *c.factors;
  ws.own_factors = TransitionFactors(c.transitions, c.S);
  return ws.own_factors;
}

namespace {

// Lanes b < S of one vec4 (S <= 4).
__attribute__((always_inline)) inline ivec4 label_lanes(int S) {
  return ivec4{0, 1, 2, 3} < static_cast<int64_t>(S);
}

// x · M for a vec4 x and the S rows of M (one vec4 each) in registers, in
// vector_matrix's order (even and odd rows apart), so both give the same bits.
__attribute__((always_inline)) inline vec4 vector_matrix_in_registers(vec4 x, const vec4* M,
                                                                      int S) {
  vec4 e = splat4(0.0), o = splat4(0.0);
  int a = 0;
  for (; a + 1 < S; a += 2) {
    e += splat4(x[a]) * M[a];
    o += splat4(x[a + 1]) * M[a + 1];
  }
  if (a < S) e += splat4(x[a]) * M[a];
  return e + o;
}

// scaled_forward for S <= 4 and no edge mask: alpha_{t-1} stays in a
// register from one token to the next (with S <= 4 the pass is one
// dependency chain, and each trip through memory added a store-forwarding
// delay to it). Same arithmetic as the general loop.
__attribute__((always_inline)) inline bool scaled_forward_in_registers(const Chain& c,
                                                                       const TransitionFactors& f,
                                                                       Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S;
  const double* np = ws.node_potential.data();
  const vec4 neg_inf = splat4(kNegInf), min_alpha = splat4(kMinAlpha);
  const ivec4 labels = label_lanes(S);
  const vec4 col_max = load4(f.col_max.data());
  vec4 factor[kBlock];
  for (int a = 0; a < S; ++a) factor[a] = load4(&f.factor[a * kBlock]);
  vec4 alpha = splat4(0.0);
  for (int64_t t = 0; t < n; ++t) {
    double* psi_row = &ws.psi[t * kBlock];
    vec4 v = load4(np + t * S);
    if (t > 0) v += col_max;
    v = labels ? v : neg_inf;
    const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
    if (m == kNegInf) return false;
    const ivec4 allowed = v != neg_inf;
    store4(psi_row, v);
    exp_shifted_row(psi_row, kBlock, m);
    ws.row_max[t] = m;
    const vec4 psi = load4(psi_row);
    const vec4 u = t == 0 ? psi : psi * vector_matrix_in_registers(alpha, factor, S);
    const ivec4 too_small = allowed & (u < min_alpha);
    if (!(allowed[0] | allowed[1] | allowed[2] | allowed[3])) return false;
    if (too_small[0] | too_small[1] | too_small[2] | too_small[3]) return false;
    const double total = (u[0] + u[1]) + (u[2] + u[3]);
    alpha = u * splat4(1.0 / total);
    store4(&ws.alpha[t * kBlock], alpha);
    ws.scale[t] = total;
  }
  return true;
}

// The beta recursion of scaled_backward for S <= 4 and no edge mask, beta_t
// in a register (see scaled_forward_in_registers).
__attribute__((always_inline)) inline void scaled_backward_in_registers(const Chain& c,
                                                                        const TransitionFactors& f,
                                                                        Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S;
  vec4 factor_t[kBlock];
  for (int b = 0; b < S; ++b) factor_t[b] = load4(&f.factor_t[b * kBlock]);
  vec4 beta = load4(&ws.beta[(n - 1) * kBlock]);
  for (int64_t t = n - 1; t >= 1; --t) {
    const vec4 g = load4(&ws.psi[t * kBlock]) * beta * splat4(1.0 / ws.scale[t]);
    store4(&ws.g[t * kBlock], g);
    beta = vector_matrix_in_registers(g, factor_t, S);
    store4(&ws.beta[(t - 1) * kBlock], beta);
  }
}

}  // namespace

SSCRF_SIMD_CLONES
bool scaled_forward(const Chain& c, const TransitionFactors& f, Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S, ld = f.ld;
  // Every lane of psi and alpha, padding included, is written below.
  ws.psi.resize(static_cast<size_t>(n) * ld);
  ws.alpha.resize(static_cast<size_t>(n) * ld);
  ws.row_max.resize(n);
  ws.scale.resize(n);
  ws.tmp.resize(ld);
  if (ld == kBlock && !c.edge_mask) return scaled_forward_in_registers(c, f, ws);
  ws.reachable.resize(2 * static_cast<size_t>(S));
  ws.allowed.resize(ld);
  const double* np = ws.node_potential.data();
  const double* col_max = f.col_max.data();
  double* acc = ws.tmp.data();
  const vec4 min_alpha = splat4(kMinAlpha), neg_inf = splat4(kNegInf), zero = splat4(0.0);
  const ivec4 lane = {0, 1, 2, 3};
  for (int64_t t = 0; t < n; ++t) {
    // The transition factors were divided by exp(col_max[b]); put it back
    // on the node so psi[t][b] * factor[a][b] = exp(T[a][b] + node - m).
    // Written a vec4 at a time: scalar stores read back as one vec4 stall
    // until they retire (the store cannot be forwarded). np is readable for
    // kBlock entries past its end, and lanes past S are padding (exp gives 0).
    double* psi = &ws.psi[t * ld];
    vec4 row_max = neg_inf;
    for (int b = 0; b < ld; b += 4) {
      vec4 v = load4(np + t * S + b);
      if (t > 0) v += load4(col_max + b);
      v = (lane + static_cast<int64_t>(b)) < S ? v : neg_inf;
      store4(psi + b, v);
      row_max = v > row_max ? v : row_max;
    }
    const double m = std::max(std::max(row_max[0], row_max[1]), std::max(row_max[2], row_max[3]));
    if (m == kNegInf) return false;
    // allowed[b] (a lane mask): the node mask allows b; padding is not allowed
    for (int b = 0; b < ld; b += 4) {
      const ivec4 allowed = load4(psi + b) != neg_inf;
      std::memcpy(&ws.allowed[b], &allowed, sizeof allowed);
    }
    exp_shifted_row(psi, ld, m);
    ws.row_max[t] = m;

    // With an edge mask, "allowed" is not enough: b must be reachable from
    // a reachable label through an allowed edge.
    const uint8_t* em = (c.edge_mask && t > 0) ? c.edge_mask + (t - 1) * S * S : nullptr;
    if (c.edge_mask) {
      uint8_t* reach = &ws.reachable[(t % 2) * S];
      const uint8_t* reach_prev = &ws.reachable[((t + 1) % 2) * S];
      for (int b = 0; b < S; ++b) {
        bool r = ws.allowed[b] != 0;
        if (r && em) {
          r = false;
          for (int a = 0; a < S && !r; ++a) r = reach_prev[a] && em[a * S + b];
        }
        reach[b] = r;
        ws.allowed[b] = r ? -1 : 0;
      }
    }

    double* alpha = &ws.alpha[t * ld];
    if (t == 0) {
      std::copy(psi, psi + ld, alpha);
    } else {
      // alpha'_t(b) = psi_t(b) · Σ_a alpha_{t-1}(a) factor_t(a, b)
      const double* prev = &ws.alpha[(t - 1) * ld];
      if (em) {
        std::fill(acc, acc + ld, 0.0);
        for (int a = 0; a < S; ++a)
          for (int b = 0; b < S; ++b)
            if (em[a * S + b]) acc[b] += prev[a] * f.factor[a * ld + b];
      } else {
        vector_matrix(prev, f.factor.data(), S, ld, acc);
      }
      for (int b = 0; b < ld; b += 4) store4(alpha + b, load4(psi + b) * load4(acc + b));
    }
    vec4 sum = zero;
    ivec4 too_small = ivec4{0, 0, 0, 0}, any = too_small;
    for (int b = 0; b < ld; b += 4) {
      const vec4 v = load4(alpha + b);
      ivec4 allowed;
      std::memcpy(&allowed, &ws.allowed[b], sizeof allowed);
      sum += v;
      any |= allowed;
      too_small |= allowed & (v < min_alpha);
    }
    if (!(any[0] | any[1] | any[2] | any[3])) return false;
    if (too_small[0] | too_small[1] | too_small[2] | too_small[3]) return false;
    const double total = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    const vec4 inv = splat4(1.0 / total);
    for (int b = 0; b < ld; b += 4) store4(alpha + b, load4(alpha + b) * inv);
    ws.scale[t] = total;
  }
  return true;
}

SSCRF_SIMD_CLONES
bool scores_within(const double* v, int64_t size) {
  // Magnitudes are below 2^63, so signed compares order them too.
  int64_t limit;
  std::memcpy(&limit, &kMaxScore, sizeof limit);
  int64_t outside = 0;
  for (int64_t i = 0; i < size; ++i) {
    int64_t bits;
    std::memcpy(&bits, v + i, sizeof bits);
    outside |= (bits & std::numeric_limits<int64_t>::max()) > limit;
  }
  return outside == 0;
}

double scaled_log_z(const Workspace& ws, int64_t n) {
  // log Z = Σ_t row_max[t] + log Π_t scale[t], with one log per sequence:
  // the product is carried as mantissa · 2^exponent. scaled_forward trusts
  // a token only when its allowed lanes are at least kMinAlpha = 1e-290, so
  // every scale is normal; should that ever change (a subnormal scale, a
  // NaN), the logs are taken token by token instead. Each scale is split
  // into its exponent and a mantissa in [0.5, 1) on its own, so only one
  // multiply per token is on the dependency chain; the running product of
  // mantissas is brought back to [0.5, 1) every 512 tokens (0.5^512 is
  // still normal) and at the end. Powers of two scale without rounding, so
  // the result has the bits of normalising after every token.
  // x becomes its mantissa in [0.5, 1) (for a normal x); returns the
  // exponent field it had (0 and 0x7ff: subnormal or zero, inf or NaN).
  const auto take_exponent = [](double& x) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const int64_t field = static_cast<int64_t>((bits >> 52) & 0x7ff);
    bits = (bits & ~(0x7ffULL << 52)) | (1022ULL << 52);
    std::memcpy(&x, &bits, sizeof bits);
    return field;
  };
  double shift = 0.0, mantissa = 1.0;
  int64_t exponent = 0;
  for (int64_t t = 0; t < n; ++t) {
    shift += ws.row_max[t];
    double scale_mantissa = ws.scale[t];
    const int64_t field = take_exponent(scale_mantissa);
    if (field == 0 || field == 0x7ff) {
      double log_z = 0.0;
      for (int64_t u = 0; u < n; ++u) log_z += ws.row_max[u] + std::log(ws.scale[u]);
      return log_z;
    }
    exponent += field - 1022;
    mantissa *= scale_mantissa;
    if ((t & 511) == 511) exponent += take_exponent(mantissa) - 1022;
  }
  exponent += take_exponent(mantissa) - 1022;
  return shift + (std::log(mantissa) + static_cast<double>(exponent) * 0.6931471805599453);
}

SSCRF_SIMD_CLONES
bool scaled_backward(const Chain& c, const TransitionFactors& f, Workspace& ws) {
  const int64_t n = c.n;
  const int S = c.S, ld = f.ld;
  // Rows are written lane by lane below, the padding lanes as zeros (row 0
  // of g is never read).
  ws.beta.resize(static_cast<size_t>(n) * ld);
  ws.g.resize(static_cast<size_t>(n) * ld);
  std::fill(&ws.beta[(n - 1) * ld], &ws.beta[(n - 1) * ld] + S, 1.0);
  std::fill(&ws.beta[(n - 1) * ld] + S, &ws.beta[n * ld], 0.0);
  if (ld == kBlock && !c.edge_mask) {
    scaled_backward_in_registers(c, f, ws);
  } else {
    for (int64_t t = n - 1; t >= 1; --t) {
      // g_t(b) = psi_t(b) beta_t(b) / scale_t;  beta_{t-1}(a) = Σ_b factor(a,b) g_t(b)
      const double* psi = &ws.psi[t * ld];
      const double* beta = &ws.beta[t * ld];
      double* g = &ws.g[t * ld];
      const double inv = 1.0 / ws.scale[t];
      // A vec4 at a time (as beta_{t-1} is read, see scaled_forward); psi and
      // beta are 0 in the padding lanes, and so is g.
      const vec4 inv4 = splat4(inv);
      for (int b = 0; b < ld; b += 4) store4(g + b, load4(psi + b) * load4(beta + b) * inv4);
      double* beta_prev = &ws.beta[(t - 1) * ld];
      if (c.edge_mask) {
        const uint8_t* em = c.edge_mask + (t - 1) * S * S;
        for (int a = 0; a < S; ++a) {
          double sum = 0.0;
          for (int b = 0; b < S; ++b)
            if (em[a * S + b]) sum += f.factor[a * ld + b] * g[b];
          beta_prev[a] = sum;
        }
        for (int a = S; a < ld; ++a) beta_prev[a] = 0.0;
      } else {
        vector_matrix(g, f.factor_t.data(), S, ld, beta_prev);
      }
    }
  }
  // Only checked against a tolerance: the order of the sum changes no output.
  for (int64_t t = 0; t < n; ++t) {
    const double total = padded_dot(&ws.alpha[t * ld], &ws.beta[t * ld], ld);
    if (!(std::fabs(total - 1.0) <= kMarginalSumTolerance)) return false;
  }
  return true;
}

TransitionFactors::TransitionFactors(const double* transitions, int S_)
    : S(S_), ld(padded_width(S_)), col_max(S_, kNegInf) {
  factor.assign(static_cast<size_t>(S) * ld, 0.0);
  factor_t.assign(static_cast<size_t>(S) * ld, 0.0);
  scored.assign(static_cast<size_t>(S) * ld, 0.0);
  scored_t.assign(static_cast<size_t>(S) * ld, 0.0);
  log_padded.assign(static_cast<size_t>(S) * ld, 0.0);
  for (int a = 0; a < S; ++a)
    for (int b = 0; b < S; ++b) col_max[b] = std::max(col_max[b], transitions[a * S + b]);
  col_max.resize(ld, 0.0);  // read a vec4 at a time
  for (int a = 0; a < S; ++a)
    for (int b = 0; b < S; ++b) {
      const double v = std::exp(transitions[a * S + b] - col_max[b]);
      factor[a * ld + b] = v;
      factor_t[b * ld + a] = v;
      scored[a * ld + b] = transitions[a * S + b] * v;
      scored_t[b * ld + a] = scored[a * ld + b];
      log_padded[a * ld + b] = transitions[a * S + b];
      largest_magnitude = std::max(largest_magnitude, std::fabs(transitions[a * S + b]));
    }
}

namespace {

// forward_backward over the whole chain at once.
SSCRF_SIMD_CLONES
double whole_forward_backward(const Chain& c, Workspace& ws, double* node, double* edge,
                              double* edge_sum) {
  const int64_t n = c.n;
  const int S = c.S;
  fill_node_potentials(c, ws);
  const TransitionFactors& f = factors_of(c, ws);
  const int ld = f.ld;
  if (scaled_forward(c, f, ws) && scaled_backward(c, f, ws)) {
    if (node) {
      for (int64_t t = 0; t < n; ++t)
        for (int b = 0; b < S; ++b) node[t * S + b] = ws.alpha[t * ld + b] * ws.beta[t * ld + b];
    }
    if (edge) {
      for (int64_t t = 1; t < n; ++t) {
        const uint8_t* em = c.edge_mask ? c.edge_mask + (t - 1) * S * S : nullptr;
        for (int a = 0; a < S; ++a)
          for (int b = 0; b < S; ++b)
            edge[(t - 1) * S * S + a * S + b] =
                (em && !em[a * S + b]) ? 0.0
                                       : ws.alpha[(t - 1) * ld + a] * f.factor[a * ld + b] *
                                             ws.g[t * ld + b];
      }
    }
    if (edge_sum) scaled_edge_sum(c, f, ws, edge_sum);
    return scaled_log_z(ws, n);
  }
  const double log_z = log_space_forward(c, ws);
  log_space_backward(c, ws, node, edge, edge_sum);
  return log_z;
}

// The label the node mask allows at a token, if it allows exactly one; else -1.
// (The count is a loop without branches, which vectorises.)
__attribute__((always_inline)) inline int pinned_label(const uint8_t* allowed, int S) {
  int count = 0;
  for (int b = 0; b < S; ++b) count += allowed[b] != 0;
  if (count != 1) return -1;
  return static_cast<int>(std::find_if(allowed, allowed + S, [](uint8_t a) { return a != 0; }) -
                          allowed);
}

// log Z of a run of one unpinned token and its marginals into node [S]: a
// softmax over its allowed labels of emission + start + end (the run's
// start and end potentials, either may be nullptr). Half the runs are of
// one token when half the tokens are pinned at random, and a whole lattice
// for each of them cost more than the pinned tokens saved.
SSCRF_SIMD_CLONES
double single_token_run(const double* emission, const uint8_t* allowed, const double* start,
                        const double* end, int S, Workspace& ws, double* node) {
  const int ld = padded_width(S);
  ws.tmp.resize(ld);
  double* v = ws.tmp.data();
  double m = kNegInf;
  for (int b = 0; b < S; ++b) {
    const double x = emission[b] + (start ? start[b] : 0.0) + (end ? end[b] : 0.0);
    v[b] = allowed[b] ? x : kNegInf;
    m = std::max(m, v[b]);
  }
  if (m == kNegInf) throw NoLabeling("the masks allow no labeling of this sequence");
  std::fill(v + S, v + ld, kNegInf);
  exp_shifted_row(v, ld, m);
  double total = 0.0;
  for (int b = 0; b < S; ++b) total += v[b];
  const double inv = 1.0 / total;
  for (int b = 0; b < S; ++b) node[b] = v[b] * inv;
  return m + std::log(total);
}

// forward_backward (node marginals and edge sums) for a node mask without an
// edge mask that pins some tokens to one label each, as partial annotations
// do; pin[t] is the label token t is pinned to, or -1. Given y_t = b*, the
// labels before t and those after it are independent, so the lattice
// splits at every pinned token: log Z_L (Tsuboi et al. 2008, eq. 3) is the
// score of the pinned tokens and of the edges between two of them, plus
// log Z of each run of unpinned tokens, whose own lattice takes T(a*, ·)
// from the pinned label a* before it as its start potentials and T(·, b*)
// into the pinned label b* after it as its end potentials. A pinned token's
// marginal is its one-hot label; an edge into a run from a* has the
// marginal of the run's first token, an edge out of it that of the run's
// last. Runs take O(S²) per token, pinned tokens O(S). Tokens are read
// left to right, each emission row before its node row is written, so
// `node` may alias the emissions as in forward_backward.
SSCRF_SIMD_CLONES
double pinned_forward_backward(const Chain& c, const std::vector<int32_t>& pin, Workspace& ws,
                               double* node, double* edge_sum) {
  const int64_t n = c.n;
  const int S = c.S;
  const double* T = c.transitions;
  double log_z = 0.0;
  for (int64_t t = 0; t < n;) {
    const int32_t b = pin[t];
    if (b >= 0) {
      double score = c.emissions[t * S + b];
      if (t == 0 && c.start) score += c.start[b];
      if (t == n - 1 && c.end) score += c.end[b];
      if (t > 0 && pin[t - 1] >= 0) {
        score += T[pin[t - 1] * S + b];
        if (edge_sum) edge_sum[pin[t - 1] * S + b] += 1.0;
      }
      log_z += score;
      std::fill(node + t * S, node + (t + 1) * S, 0.0);
      node[t * S + b] = 1.0;
      ++t;
      continue;
    }
    int64_t j = t + 1;
    while (j < n && pin[j] < 0) ++j;
    // The run [t, j): its start and end potentials
    const double* start = t == 0 ? c.start : T + pin[t - 1] * S;
    const double* end = c.end;
    if (j < n) {
      ws.run_end.resize(S);
      for (int a = 0; a < S; ++a) ws.run_end[a] = T[a * S + pin[j]];
      end = ws.run_end.data();
    }
    if (j == t + 1) {
      log_z += single_token_run(c.emissions + t * S, c.node_mask + t * S, start, end, S, ws,
                                node + t * S);
    } else {
      Chain run = c;
      run.n = j - t;
      run.emissions = c.emissions + t * S;
      run.node_mask = c.node_mask + t * S;
      run.start = start;
      run.end = end;
      log_z += whole_forward_backward(run, ws, node + t * S, nullptr, edge_sum);
    }
    if (edge_sum && t > 0) {
      double* from_pinned = edge_sum + pin[t - 1] * S;
      for (int b2 = 0; b2 < S; ++b2) from_pinned[b2] += node[t * S + b2];
    }
    if (edge_sum && j < n)
      for (int a = 0; a < S; ++a) edge_sum[a * S + pin[j]] += node[(j - 1) * S + a];
    t = j;
  }
  return log_z;
}

}  // namespace

SSCRF_SIMD_CLONES
double forward_backward(const Chain& c, Workspace& ws, double* node, double* edge,
                        double* edge_sum) {
  if (c.n == 0) return 0.0;
  if (c.node_mask && !c.edge_mask && node && !edge) {
    ws.pinned.resize(c.n);
    bool any = false;
    for (int64_t t = 0; t < c.n; ++t) {
      ws.pinned[t] = pinned_label(c.node_mask + t * c.S, c.S);
      any |= ws.pinned[t] >= 0;
    }
    if (any) return pinned_forward_backward(c, ws.pinned, ws, node, edge_sum);
  }
  return whole_forward_backward(c, ws, node, edge, edge_sum);
}

SSCRF_SIMD_CLONES
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
