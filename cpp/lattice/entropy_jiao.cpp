// The entropy gradient of Jiao et al. (2006) §3, kept as an independent
// reference and benchmark baseline: -Cov[f, s] from quadratic feature
// expectations, with summary matrices M_{u+1,v-1} = Π_l M_l in a nested
// dynamic programme, O(n² S³). Works in scaled probabilities: M_t(a,b) =
// factor(a,b) psi_t(b) / scale_t, so α_{u-1} M_u ... M_v β_v is a joint
// probability without dividing by Z.
#include <stdexcept>
#include <vector>

#include "lattice/entropy_jiao.hpp"
#include "lattice/scaled_passes.hpp"
#include "runtime/interrupt.hpp"

namespace sscrf {

namespace {

struct JiaoLattice {
  int64_t n;
  int S, ld;
  std::vector<double> M;    // [n][S][S], M[0] unused
  std::vector<double> rho;  // [n][S][S] log-potentials ρ_t(a,b); ρ_0 in row 0
};

JiaoLattice build(const Chain& c, Workspace& ws) {
  if (c.node_mask || c.edge_mask) throw InputError("the jiao method does not support masks");
  fill_node_potentials(c, ws);
  const TransitionFactors& f = factors_of(c, ws);
  if (!(scaled_forward(c, f, ws) && scaled_backward(c, f, ws)))
    throw InputError(
        "the jiao reference works in scaled probabilities and cannot represent this chain "
        "(probabilities underflow); use method='fast'");
  JiaoLattice L{c.n, c.S, f.ld, {}, {}};
  const int64_t n = c.n;
  const int S = c.S, ld = f.ld;
  L.M.assign(static_cast<size_t>(n) * S * S, 0.0);
  L.rho.assign(static_cast<size_t>(n) * S * S, 0.0);
  const double* np = ws.node_potential.data();
  for (int64_t t = 0; t < n; ++t)
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) {
        if (t > 0) L.M[(t * S + a) * S + b] = f.factor[a * ld + b] * ws.psi[t * ld + b] / ws.scale[t];
        L.rho[(t * S + a) * S + b] = (t > 0 ? c.transitions[a * S + b] : 0.0) + np[t * S + b];
      }
  return L;
}

// C = A · B for S×S matrices.
void matmul(const double* A, const double* B, double* C, int S) {
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < S; ++j) {
      double s = 0.0;
      for (int k = 0; k < S; ++k) s += A[i * S + k] * B[k * S + j];
      C[i * S + j] = s;
    }
}

void identity(std::vector<double>& P, int S) {
  P.assign(static_cast<size_t>(S) * S, 0.0);
  for (int i = 0; i < S; ++i) P[i * S + i] = 1.0;
}

}  // namespace

double entropy_gradient_jiao(const Chain& c, Workspace& ws, double* dE, double* dT) {
  const int64_t n = c.n;
  const int S = c.S;
  if (n == 0) return 0.0;
  const JiaoLattice L = build(c, ws);
  const int ld = L.ld;
  const double* M = L.M.data();
  const double* rho = L.rho.data();  // re-pointed at the centred copy below
  auto alpha = [&](int64_t t, int a) { return ws.alpha[t * ld + a]; };
  auto beta = [&](int64_t t, int a) { return ws.beta[t * ld + a]; };
  // Pairwise marginals of each edge, p_u(a,b) = α_{u-1}(a) M_u(a,b) β_u(b); p_0(b) in row 0.
  std::vector<double> p(static_cast<size_t>(n) * S * S, 0.0);
  double expected_score = 0.0;
  for (int64_t t = 0; t < n; ++t)
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) {
        if (t == 0 && a > 0) continue;
        const double q = t == 0 ? alpha(0, b) * beta(0, b)
                                : alpha(t - 1, a) * M[(t * S + a) * S + b] * beta(t, b);
        p[(t * S + a) * S + b] = q;
        expected_score += q * rho[(t * S + a) * S + b];
      }
  // Centre each ρ_t on its expectation (Cov is unchanged by a constant per
  // position) so that the quadratic expectations do not cancel at the size
  // of the scores.
  std::vector<double> rho_c(rho, rho + static_cast<size_t>(n) * S * S);
  for (int64_t t = 0; t < n; ++t) {
    double c_t = 0.0;
    for (int k = 0; k < S * S; ++k) c_t += p[t * S * S + k] * rho[t * S * S + k];
    for (int k = 0; k < S * S; ++k) rho_c[t * S * S + k] -= c_t;
  }
  rho = rho_c.data();
  const double centred_expectation = 0.0;
  // w_v(b') = Σ_b M_v(b',b) β_v(b) ρ_v(b',b) and l_v(b) = Σ_b' α_{v-1}(b') M_v(b',b) ρ_v(b',b):
  // the far edge of a pair summed against its log-potential, from the right and the left.
  std::vector<double> w(static_cast<size_t>(n) * S, 0.0), l(static_cast<size_t>(n) * S, 0.0);
  for (int b = 0; b < S; ++b) l[b] = alpha(0, b) * rho[b];
  for (int64_t v = 1; v < n; ++v)
    for (int a = 0; a < S; ++a)
      for (int b = 0; b < S; ++b) {
        const double m = M[(v * S + a) * S + b] * rho[(v * S + a) * S + b];
        w[v * S + a] += m * beta(v, b);
        l[v * S + b] += alpha(v - 1, a) * m;
      }
  std::vector<double> P, Q(static_cast<size_t>(S) * S), X(S), Y(S), cov(static_cast<size_t>(S) * S);
  for (int64_t u = 0; u < n; ++u) {
    poll_interrupt();  // each u costs O(n S³): a long chain takes minutes
    // X(a) = Σ_{v>u} (M_{u+1,v-1} w_v)(a): pairs whose second edge comes later
    std::fill(X.begin(), X.end(), 0.0);
    identity(P, S);
    for (int64_t v = u + 1; v < n; ++v) {
      for (int a = 0; a < S; ++a)
        for (int b = 0; b < S; ++b) X[a] += P[a * S + b] * w[v * S + b];
      matmul(P.data(), &M[v * S * S], Q.data(), S);  // M_{u+1,v} = M_{u+1,v-1} M_v
      P.swap(Q);
    }
    // Y(a') = Σ_{v<u} (l_v M_{v+1,u-1})(a'): pairs whose first edge comes earlier
    std::fill(Y.begin(), Y.end(), 0.0);
    identity(P, S);
    for (int64_t v = u - 1; v >= 0; --v) {
      for (int a = 0; a < S; ++a)
        for (int b = 0; b < S; ++b) Y[b] += l[v * S + a] * P[a * S + b];
      if (v >= 1) {
        matmul(&M[v * S * S], P.data(), Q.data(), S);  // M_{v,u-1} = M_v M_{v+1,u-1}
        P.swap(Q);
      }
    }
    // cov(1[e_u = (a',a)], s) = E[1_u Σ_v ρ_v] - p_u(a',a) E[s]
    for (int ap = 0; ap < S; ++ap)
      for (int a = 0; a < S; ++a) {
        const size_t k = (u * S + ap) * S + a;
        double joint;
        if (u == 0) {
          if (ap > 0) continue;
          joint = alpha(0, a) * X[a];
        } else {
          joint = alpha(u - 1, ap) * M[k] * X[a] + Y[ap] * M[k] * beta(u, a);
        }
        cov[ap * S + a] = joint + p[k] * rho[k] - p[k] * centred_expectation;
      }
    // dH/dρ_u = -cov; E[u][a] enters every ρ_u(·, a), T every ρ_u for u ≥ 1
    for (int a = 0; a < S; ++a) {
      double sum = 0.0;
      if (u == 0) {
        sum = cov[a];
      } else {
        for (int ap = 0; ap < S; ++ap) {
          sum += cov[ap * S + a];
          dT[ap * S + a] -= cov[ap * S + a];
        }
      }
      dE[u * S + a] = -sum;
    }
  }
  return scaled_log_z(ws, n) - expected_score;
}

void jiao_pair_marginals(const Chain& c, Workspace& ws, int64_t u, int64_t v, double* out) {
  const int S = c.S;
  if (!(1 <= u && u < v && v < c.n)) throw InputError("need 1 <= u < v < n");
  const JiaoLattice L = build(c, ws);
  const int ld = L.ld;
  std::vector<double> P, Q(static_cast<size_t>(S) * S);
  identity(P, S);
  for (int64_t k = u + 1; k < v; ++k) {
    matmul(P.data(), &L.M[k * S * S], Q.data(), S);
    P.swap(Q);
  }
  for (int ap = 0; ap < S; ++ap)
    for (int a = 0; a < S; ++a)
      for (int bp = 0; bp < S; ++bp)
        for (int b = 0; b < S; ++b)
          out[((ap * S + a) * S + bp) * S + b] = ws.alpha[(u - 1) * ld + ap] *
                                                 L.M[(u * S + ap) * S + a] * P[a * S + bp] *
                                                 L.M[(v * S + bp) * S + b] * ws.beta[v * ld + b];
}

}  // namespace sscrf
