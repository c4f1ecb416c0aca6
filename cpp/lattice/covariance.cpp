// E_p[r(y)] of an additive score and its gradient Cov_p[F, r] in O(n S²)
// (DESIGN.md kernel 3): prefix expectations forward, suffix expectations
// backward, carried as unnormalised products (expectation semiring) so that
// nothing is divided; log-space conditionals when scaling fails.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lattice/covariance.hpp"
#include "lattice/scaled_passes.hpp"
#include "runtime/dense_kernels.hpp"

namespace sscrf {

namespace {

inline double node_score(const AdditiveScore& r, int64_t t, int S, int b) {
  return r.node ? r.node[t * S + b] : 0.0;
}

// Node marginals of a consistent scaled pass sum to 1 up to rounding; a
// larger gap means beta overflowed (as in forward_backward).
constexpr double kMarginalSumTolerance = 1e-8;

// Above this size of two S x ld matrices, the edge products of the
// covariance kernel run ahead of its sweeps (see edge_ahead).
constexpr size_t kEdgeAheadBytes = 24 * 1024;

// Labels b..b+3 of a row of S node scores as a vec4, 0 past S (all 0 for
// a null row), so that the loops over labels run a vec4 at a time over
// padded rows. A row's last vec4 is put together in registers: copied to a
// padded row first, it would be read back across stores that cannot be
// forwarded, on the backward sweep's dependency chain.
__attribute__((always_inline)) inline vec4 node_scores4(const double* row, int S, int b) {
  if (!row) return splat4(0.0);
  if (b + 4 <= S) return load4(row + b);
  return vec4{row[b], b + 1 < S ? row[b + 1] : 0.0, b + 2 < S ? row[b + 2] : 0.0, 0.0};
}

// *total = Σ_b p(b) and *expected = Σ_b p(b) · node[b], p = alpha ∘ beta
// (padded rows, zeros past S); node has S entries, or is nullptr (zeros).
// These sums, like padded_dot's below, lie on the backward sweep's
// dependency chain (c_t feeds bR_{t-1}, which feeds the next vector-matrix
// product): they add a vec4 at a time, then lane by lane in a fixed order,
// rather than one label after another (S dependent adds per position).
__attribute__((always_inline)) inline void marginal_sums(const double* alpha, const double* beta,
                                                         const double* node, int S, int ld,
                                                         double* total, double* expected) {
  vec4 sum = splat4(0.0), weighted = splat4(0.0);
  for (int b = 0; b < ld; b += 4) {
    const vec4 p = load4(alpha + b) * load4(beta + b);
    sum += p;
    weighted += p * node_scores4(node, S, b);
  }
  *total = lanes_sum(sum);
  *expected = lanes_sum(weighted);
}

// Scaled path, after scaled_forward. With L_t(b) = E[Σ_{u≤t} r_u | y_t = b]
// and R_t(a) = E[Σ_{u>t} r_u | y_t = a]:
//   aL_t(b) = alpha_t(b) L_t(b)
//           = psi_t(b)/s_t Σ_a (aL_{t-1}(a) + alpha_{t-1}(a) edge_t(a,b)) F(a,b)
//             + alpha_t(b) node_t(b)
//   bR_t(a) = beta_t(a) R_t(a)
//           = Σ_b F(a,b) h_{t+1}(b) + Σ_b edge_{t+1}(a,b) F(a,b) g_{t+1}(b),
//     h_t(b) = psi_t(b)/s_t (bR_t(b) + beta_t(b) node_t(b)), g_t = psi_t beta_t / s_t
//   ∂E[r]/∂E[t][b] = aL_t(b) beta_t(b) + alpha_t(b) bR_t(b) - p_t(b) E[r]
//   ∂E[r]/∂T(a,b)  = Σ_t p_t(a,b) (L_{t-1}(a) + edge_t(a,b) + node_t(b) + R_t(b) - E[r])
//                  = Σ_t F(a,b) [aL_{t-1}(a) g_t(b) + alpha_{t-1}(a) (h_t(b) - g_t(b) E[r])]
//                    + edge_t(a,b) F(a,b) alpha_{t-1}(a) g_t(b)
// Two sweeps instead of forward-backward plus three: the backward sweep
// computes beta and bR together (one pass over F per position), centring
// each position on the way; the forward sweep computes aL and ∂E. Writes
// E[r] to *expectation; returns false, before writing d_emissions or
// d_transitions, when the scaled numbers cannot be trusted.
SSCRF_SIMD_CLONES
bool scaled_expectation_gradient(const Chain& c, const TransitionFactors& f, Workspace& ws,
                                 const AdditiveScore& r, double scale, double* dE, double* dT,
                                 double* expectation) {
  const int64_t n = c.n;
  const int S = c.S, ld = f.ld;
  const size_t rows = static_cast<size_t>(n) * ld;
  // Rows are written lane by lane below, padding lanes as zeros (rows that
  // are never read, g[0] and h[0], are left as they are).
  ws.beta.resize(rows);
  ws.g.resize(rows);
  Scratch& aL = ws.cov_forward;
  Scratch& bR = ws.cov_backward;
  Scratch& h = ws.cov_h;
  aL.resize(rows);
  bR.resize(rows);
  h.resize(rows);
  // G = edge_t ∘ F (and Gᵀ) for positions t >= 1; the chain's own
  // transitions come with the factors, other edge scores are loaded here.
  const double* G = nullptr;
  const double* GT = nullptr;
  bool loaded = false;
  auto load_edge = [&](int64_t t) {
    if (!loaded) {  // the padding lanes are zeros
      ws.cov_edge.assign(static_cast<size_t>(S) * ld, 0.0);
      ws.cov_edge_t.assign(static_cast<size_t>(S) * ld, 0.0);
      loaded = true;
    }
    const double* e = r.edge + (t - 1) * r.edge_stride;
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) {
        const double v = e[a * S + b] * f.factor[a * ld + b];
        ws.cov_edge[a * ld + b] = v;
        ws.cov_edge_t[b * ld + a] = v;
      }
    G = ws.cov_edge.data();
    GT = ws.cov_edge_t.data();
  };
  const bool has_edge = r.edge != nullptr;
  const bool shared_edge = has_edge && r.edge_stride == 0;
  if (shared_edge && r.edge == c.transitions) {
    G = f.scored.data();
    GT = f.scored_t.data();
  } else if (shared_edge) {
    load_edge(1);
  }
  ws.tmp.assign(2 * static_cast<size_t>(ld), 0.0);
  double* v1 = ws.tmp.data();
  double* edge_part = v1 + ld;  // Σ_b edge_t(a,b) F(a,b) g_t(b)

  // Each position's score is centred on its expectation c_t: Cov[F, r] does
  // not change, but L, R and E[r] shrink from the size of the scores to the
  // size of their fluctuations, and with them the cancellation error in
  // L + R - E[r] (peaked chains would otherwise keep rounding noise of
  // eps·Σ_t |r_t| in gradients that are truly ~0).
  // Rows of stride ld; the padding lanes hold -c_t and are only ever
  // multiplied by alpha's zeros there.
  Scratch& centred = ws.cov_node;
  centred.resize(static_cast<size_t>(n) * ld);
  double offset = 0.0;
  std::fill(&ws.beta[(n - 1) * ld], &ws.beta[(n - 1) * ld] + S, 1.0);
  std::fill(&ws.beta[(n - 1) * ld] + S, &ws.beta[n * ld], 0.0);
  std::fill(&bR[(n - 1) * ld], &bR[n * ld], 0.0);
  // With one edge score G for every position and many labels, beta runs
  // first on its own, then G g_t and alpha_{t-1} · G for every t at once
  // (matrix_product); the two sweeps then read one matrix per position
  // instead of two. Two 49 x 52 matrices take 40 KB, more than many L1
  // caches hold, and would be read from L2 at every position; with fewer
  // labels the one sweep's three products share their loads and hide each
  // other's latency, so kEdgeAheadBytes sets where this starts.
  const bool edge_ahead = shared_edge && n > 1 &&
                          2 * sizeof(double) * static_cast<size_t>(S) * ld > kEdgeAheadBytes;
  double* edge_forward = nullptr;   // [n-1][ld]: alpha_{t-1} · G at t - 1
  double* edge_backward = nullptr;  // [n-1][ld]: G g_t at t - 1
  if (edge_ahead) {
    for (int64_t t = n - 1; t >= 1; --t) {
      const vec4 inv4 = splat4(1.0 / ws.scale[t]);
      const double* psi = &ws.psi[t * ld];
      const double* beta = &ws.beta[t * ld];
      double* g = &ws.g[t * ld];
      for (int b = 0; b < ld; b += 4) store4(g + b, load4(psi + b) * load4(beta + b) * inv4);
      vector_matrix(g, f.factor_t.data(), S, ld, &ws.beta[(t - 1) * ld]);
    }
    ws.cov_edge_forward.resize(static_cast<size_t>(n - 1) * ld);
    ws.cov_edge_backward.resize(static_cast<size_t>(n - 1) * ld);
    edge_forward = ws.cov_edge_forward.data();
    edge_backward = ws.cov_edge_backward.data();
    matrix_product(ws.alpha.data(), G, n - 1, S, ld, edge_forward);
    matrix_product(ws.g.data() + ld, GT, n - 1, S, ld, edge_backward);
  }
  for (int64_t t = n - 1; t >= 0; --t) {
    const double* alpha = &ws.alpha[t * ld];
    const double* beta = &ws.beta[t * ld];
    const double* node_t = r.node ? r.node + t * S : nullptr;
    double total, c_t;
    marginal_sums(alpha, beta, node_t, S, ld, &total, &c_t);
    if (!(std::fabs(total - 1.0) <= kMarginalSumTolerance)) return false;
    double* centred_row = &centred[t * ld];
    if (t == 0) {
      for (int b = 0; b < ld; b += 4)
        store4(centred_row + b, node_scores4(node_t, S, b) - splat4(c_t));
      offset += c_t;
      break;
    }
    const double inv = 1.0 / ws.scale[t];
    const double* psi = &ws.psi[t * ld];
    double* g = &ws.g[t * ld];
    // A vec4 at a time: psi and beta are zeros in the padding lanes.
    const vec4 inv4 = splat4(inv);
    if (!edge_ahead)
      for (int b = 0; b < ld; b += 4) store4(g + b, load4(psi + b) * load4(beta + b) * inv4);
    double* ht = &h[t * ld];
    const double* bR_t = &bR[t * ld];
    double* beta_prev = &ws.beta[(t - 1) * ld];
    double* bR_prev = &bR[(t - 1) * ld];
    // Every row below is padded with zeros (psi, beta, g, bR and
    // node_scores4 are 0 past S), so the padding lanes of ht and bR_prev
    // come out 0.
    if (has_edge) {
      // c_t needs the edge part Gᵀ g_t, and h_t needs c_t; as
      // h_t = h°_t - c_t g_t with h°_t the uncentred h_t, and Fᵀ g_t = beta_{t-1},
      //   Fᵀ h_t = Fᵀ h°_t - c_t beta_{t-1},
      // so the products run before c_t is known: in one sweep, or (edge_ahead)
      // Fᵀ h°_t alone, with Gᵀ g_t computed ahead and the edge part of c_t
      // as (alpha_{t-1} · G) · g_t.
      for (int b = 0; b < ld; b += 4)
        store4(ht + b, load4(psi + b) * inv4 *
                           (load4(bR_t + b) + load4(beta + b) * node_scores4(node_t, S, b)));
      const double* edge = edge_part;
      if (edge_ahead) {
        vector_matrix(ht, f.factor_t.data(), S, ld, bR_prev);
        c_t += padded_dot(edge_forward + (t - 1) * ld, g, ld);
        edge = edge_backward + (t - 1) * ld;
      } else {
        if (!shared_edge) load_edge(t);
        vector_pair_matrix_and_product(g, ht, f.factor_t.data(), GT, S, ld, beta_prev, bR_prev,
                                       edge_part);
        c_t += padded_dot(&ws.alpha[(t - 1) * ld], edge_part, ld);
      }
      const vec4 c4 = splat4(c_t);
      for (int b = 0; b < ld; b += 4) {
        store4(centred_row + b, node_scores4(node_t, S, b) - c4);
        store4(ht + b, load4(ht + b) - c4 * load4(g + b));
        const vec4 edge4 = load4(edge + b) - c4 * load4(beta_prev + b);
        store4(bR_prev + b, load4(bR_prev + b) + edge4);
      }
    } else {
      const vec4 c4 = splat4(c_t);
      for (int b = 0; b < ld; b += 4) {
        const vec4 centred4 = node_scores4(node_t, S, b) - c4;
        store4(centred_row + b, centred4);
        store4(ht + b, load4(psi + b) * inv4 * (load4(bR_t + b) + load4(beta + b) * centred4));
      }
      // beta_{t-1} = Fᵀ g_t and the F part of bR_{t-1} = Fᵀ h_t, in one sweep
      vector_pair_matrix(g, ht, f.factor_t.data(), S, ld, beta_prev, bR_prev);
    }
    offset += c_t;
  }
  // E[r'] of the centred score (~0), from position 0: Σ_b p_0(b) (r'_0(b) + R_0(b))
  double expected = 0.0;
  for (int b = 0; b < S; ++b)
    expected += ws.alpha[b] * (ws.beta[b] * centred[b] + bR[b]);

  // ∂E[r]/∂E[t] as soon as aL_t is known, while the rows of t are in cache;
  // a vec4 at a time over the labels of dE's row (stride S), then the rest
  const vec4 scale4 = splat4(scale), expected4 = splat4(expected);
  const auto d_emissions_row = [&](int64_t t) {
    const double* alpha = &ws.alpha[t * ld];
    const double* beta = &ws.beta[t * ld];
    const double* aL_t = &aL[t * ld];
    const double* bR_t = &bR[t * ld];
    double* out = dE + t * S;
    int b = 0;
    for (; b + 4 <= S; b += 4) {
      const vec4 a4 = load4(alpha + b), b4 = load4(beta + b);
      store4(out + b, scale4 * (load4(aL_t + b) * b4 + a4 * load4(bR_t + b) - a4 * b4 * expected4));
    }
    for (; b < S; ++b)
      out[b] = scale * (aL_t[b] * beta[b] + alpha[b] * bR_t[b] - alpha[b] * beta[b] * expected);
  };
  // (aL's padding lanes are alpha's zeros times centred's -c_t: ±0)
  for (int b = 0; b < ld; b += 4) store4(&aL[b], load4(&ws.alpha[b]) * load4(&centred[b]));
  d_emissions_row(0);
  for (int64_t t = 1; t < n; ++t) {
    const double* alpha_prev = &ws.alpha[(t - 1) * ld];
    if (edge_ahead) {
      vector_matrix(&aL[(t - 1) * ld], f.factor.data(), S, ld, v1);
      const double* x = edge_forward + (t - 1) * ld;
      for (int b = 0; b < ld; b += 4) store4(v1 + b, load4(v1 + b) + load4(x + b));
    } else if (has_edge) {
      if (!shared_edge) load_edge(t);
      vector_matrix_sum(&aL[(t - 1) * ld], f.factor.data(), alpha_prev, G, S, ld, v1);
    } else {
      vector_matrix(&aL[(t - 1) * ld], f.factor.data(), S, ld, v1);
    }
    const vec4 inv4 = splat4(1.0 / ws.scale[t]);
    const double* psi = &ws.psi[t * ld];
    const double* alpha = &ws.alpha[t * ld];
    const double* centred_row = &centred[t * ld];
    double* out = &aL[t * ld];
    for (int b = 0; b < ld; b += 4)
      store4(out + b,
             load4(v1 + b) * load4(psi + b) * inv4 + load4(alpha + b) * load4(centred_row + b));
    d_emissions_row(t);
  }
  if (n > 1) {
    // h_t <- h_t - g_t E[r']; O = Σ_t aL_{t-1} ⊗ g_t + alpha_{t-1} ⊗ h_t and,
    // for a shared edge score, P = Σ_t alpha_{t-1} ⊗ g_t (edge marginals / F)
    for (int64_t t = 1; t < n; ++t)
      for (int b = 0; b < ld; b += 4)
        store4(&h[t * ld + b], load4(&h[t * ld + b]) - load4(&ws.g[t * ld + b]) * expected4);
    const size_t block = static_cast<size_t>(S) * ld;
    ws.outer.resize(3 * block);
    double* O = ws.outer.data();  // the two sums of O, added below
    double* Oh = O + block;
    double* P = Oh + block;
    transposed_product(aL.data(), ws.g.data() + ld, n - 1, S, ld, O);
    transposed_product(ws.alpha.data(), h.data() + ld, n - 1, S, ld, Oh);
    if (shared_edge) transposed_product(ws.alpha.data(), ws.g.data() + ld, n - 1, S, ld, P);
    for (int a = 0; a < S; ++a) {
      double* __restrict out = dT + a * S;
      const double* __restrict o = O + a * ld;
      const double* __restrict oh = Oh + a * ld;
      const double* __restrict fa = f.factor.data() + a * ld;
      if (shared_edge) {
        const double* __restrict p = P + a * ld;
        const double* __restrict ga = G + a * ld;
        for (int b = 0; b < S; ++b)
          out[b] = (out[b] + scale * (fa[b] * (o[b] + oh[b]))) + scale * (ga[b] * p[b]);
      } else {
        for (int b = 0; b < S; ++b) out[b] += scale * (fa[b] * (o[b] + oh[b]));
      }
    }
    if (has_edge && !shared_edge) {
      for (int64_t t = 1; t < n; ++t) {
        load_edge(t);
        for (int a = 0; a < S; ++a)
          for (int b = 0; b < S; ++b)
            dT[a * S + b] += scale * (G[a * ld + b] * ws.alpha[(t - 1) * ld + a] * ws.g[t * ld + b]);
      }
    }
  }
  *expectation = expected + offset;
  return true;
}

// Log-space path from conditionals: L_t(b) = Σ_a q_t(a|b) (L_{t-1}(a) + r_t(a,b)),
// q_t(a|b) = p(y_{t-1}=a | y_t=b); R_t(a) = Σ_b q'_t(b|a) (r_{t+1}(a,b) + R_{t+1}(b)),
// q'_t(b|a) = p(y_{t+1}=b | y_t=a). Each conditional is normalised on its own.
double log_space_expectation_gradient(const Chain& c, Workspace& ws, const AdditiveScore& r,
                                      double scale, double* dE, double* dT, double* log_z) {
  const int64_t n = c.n;
  const int S = c.S;
  const double* T = c.transitions;
  const double* np = ws.node_potential.data();
  const double lz = log_space_forward(c, ws);
  if (log_z) *log_z = lz;
  Scratch& node = ws.cov_h;
  node.resize(static_cast<size_t>(n) * S);
  log_space_backward(c, ws, node.data(), nullptr, nullptr);
  Scratch& L = ws.cov_forward;
  Scratch& R = ws.cov_backward;
  L.assign(static_cast<size_t>(n) * S, 0.0);
  R.assign(static_cast<size_t>(n) * S, 0.0);
  Scratch& w = ws.cov_edge;
  w.resize(static_cast<size_t>(S) * S);
  auto edge = [&](int64_t t, int a, int b) {
    return r.edge ? r.edge[(t - 1) * r.edge_stride + a * S + b] : 0.0;
  };
  for (int b = 0; b < S; ++b) L[b] = node_score(r, 0, S, b);
  for (int64_t t = 1; t < n; ++t) {
    const double* la = &ws.log_alpha[(t - 1) * S];
    for (int b = 0; b < S; ++b) {
      for (int a = 0; a < S; ++a) w[a] = la[a] + T[a * S + b];
      const double norm = log_sum_exp(w.data(), S);
      double sum = 0.0;
      for (int a = 0; a < S; ++a)
        sum += std::exp(w[a] - norm) * (L[(t - 1) * S + a] + edge(t, a, b));
      L[t * S + b] = sum + node_score(r, t, S, b);
    }
  }
  for (int64_t t = n - 2; t >= 0; --t) {
    const double* lb = &ws.log_beta[(t + 1) * S];
    for (int a = 0; a < S; ++a) {
      for (int b = 0; b < S; ++b) w[b] = T[a * S + b] + np[(t + 1) * S + b] + lb[b];
      const double norm = log_sum_exp(w.data(), S);
      double sum = 0.0;
      for (int b = 0; b < S; ++b)
        sum += std::exp(w[b] - norm) *
               (edge(t + 1, a, b) + node_score(r, t + 1, S, b) + R[(t + 1) * S + b]);
      R[t * S + a] = sum;
    }
  }
  double expectation = 0.0;
  for (int b = 0; b < S; ++b) expectation += node[(n - 1) * S + b] * L[(n - 1) * S + b];
  for (int64_t t = 0; t < n; ++t)
    for (int b = 0; b < S; ++b)
      dE[t * S + b] = scale * (node[t * S + b] * (L[t * S + b] + R[t * S + b] - expectation));
  for (int64_t t = 1; t < n; ++t) {
    // p_t(a,b) ∝ exp(la_{t-1}(a) + T(a,b) + node_t(b) + lb_t(b)), normalised over (a,b)
    const double* la = &ws.log_alpha[(t - 1) * S];
    const double* lb = &ws.log_beta[t * S];
    w.resize(static_cast<size_t>(S) * S);
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) w[a * S + b] = la[a] + T[a * S + b] + np[t * S + b] + lb[b];
    const double norm = log_sum_exp(w.data(), S * S);
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b)
        dT[a * S + b] += scale * (std::exp(w[a * S + b] - norm) *
                                  (L[(t - 1) * S + a] + edge(t, a, b) + node_score(r, t, S, b) +
                                   R[t * S + b] - expectation));
  }
  return expectation;
}

}  // namespace

SSCRF_SIMD_CLONES
double expectation_gradient(const Chain& c, Workspace& ws, const AdditiveScore& r,
                            double* d_emissions, double* d_transitions, double* log_z,
                            double scale) {
  if (c.node_mask || c.edge_mask)
    throw InputError("expectation gradients do not support masks");
  if (c.n == 0) {
    if (log_z) *log_z = 0.0;
    return 0.0;
  }
  fill_node_potentials(c, ws);
  AdditiveScore score = r;
  if (r.log_potentials) {
    score.node = ws.node_potential.data();
    score.edge = c.transitions;
    score.edge_stride = 0;
  }
  const TransitionFactors& f = factors_of(c, ws);
  double expected;
  // The scaled path writes its outputs only once its backward sweep has
  // been trusted, so a failed attempt leaves them for the log-space path.
  if (scaled_forward(c, f, ws) &&
      scaled_expectation_gradient(c, f, ws, score, scale, d_emissions, d_transitions, &expected)) {
    if (log_z) *log_z = scaled_log_z(ws, c.n);
    return expected;
  }
  return log_space_expectation_gradient(c, ws, score, scale, d_emissions, d_transitions, log_z);
}

}  // namespace sscrf
