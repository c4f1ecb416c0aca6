// The likelihood objectives (complete, partial and listed alternative
// labelings) and the corpus decoders.
#include <algorithm>
#include <cmath>
#include <limits>

#include "chunked.hpp"

namespace sscrf {

namespace {

// One sequence's −w log Σ_k p(y_k | x) over its K listed labelings
// y [K][n] (K = 1: the likelihood, −w log p(y | x)), and its gradient:
// dE = w (p_t(b) − Σ_k q_k [y_k,t = b]), written over the emissions, and
// likewise with edge marginals and transition counts added into dT, where
// q_k = p(y_k | x) / Σ_j p(y_j | x) = softmax_k score(y_k), since Z(x)
// cancels (Tsuboi et al. 2008, eq. 4, with the allowed set listed).
double listed_labelings_loss(const Chain& c, Workspace& ws, double w, const int32_t* y,
                             int64_t K, double* dE, double* dT) {
  const int S = c.S;
  // q_k from the labelings' scores, read before dE overwrites E
  Scratch& q = ws.alternative_weights;
  q.resize(static_cast<size_t>(K));
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < K; ++k) {
    q[k] = labeling_score(c, y + k * c.n);
    top = std::max(top, q[k]);
  }
  double total = 0.0;
  for (int64_t k = 0; k < K; ++k) total += (q[k] = std::exp(q[k] - top));
  const double log_sum = top + std::log(total);  // log Σ_k exp score(y_k); score(y) at K = 1
  double log_z;
  if (w == 1.0) {
    log_z = forward_backward(c, ws, dE, nullptr, dT);
  } else {
    ws.edge_scratch.assign(static_cast<size_t>(S) * S, 0.0);
    log_z = forward_backward(c, ws, dE, nullptr, ws.edge_scratch.data());
    for (int i = 0; i < S * S; ++i) dT[i] += w * ws.edge_scratch[i];
    for (int64_t i = 0; i < c.n * S; ++i) dE[i] *= w;
  }
  for (int64_t k = 0; k < K; ++k) {
    const int32_t* yk = y + k * c.n;
    const double wq = w * (q[k] / total);
    for (int64_t t = 0; t < c.n; ++t) {
      dE[t * S + yk[t]] -= wq;
      if (t > 0) dT[yk[t - 1] * S + yk[t]] -= wq;
    }
  }
  return w * (log_z - log_sum);
}

}  // namespace

double likelihood_objective(const Corpus& corpus, const Layout& layout, const double* theta,
                            double* grad, int n_threads) {
  return evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        return listed_labelings_loss(c, ws, corpus.weight(s), &corpus.labels[corpus.offsets[s]],
                                     1, dE, dT);
      });
}

double partial_likelihood_objective(const Corpus& corpus, const Layout& layout,
                                    const double* theta, double* grad, int n_threads) {
  const int S = layout.S;
  return evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        const int64_t tb = corpus.offsets[s];
        const double w = corpus.weight(s);
        // Constrained pass first: the unconstrained one overwrites the emissions.
        Chain constrained = c;
        constrained.node_mask = corpus.mask_at(tb);
        constrained.edge_mask = c.n > 1 ? corpus.edge_mask_from(tb) : nullptr;
        Scratch& p_allowed = ws.partial_node;
        p_allowed.resize(static_cast<size_t>(c.n) * S);
        ws.partial_edge.assign(static_cast<size_t>(S) * S, 0.0);
        const double log_z_allowed =
            forward_backward(constrained, ws, p_allowed.data(), nullptr, ws.partial_edge.data());
        // ∂(log Z - log Z_L) = p - p_L, for nodes and for edges; with unit
        // weight the free pass adds its edge sums to dT itself
        const bool unit = w == 1.0;
        if (!unit) ws.edge_scratch.assign(static_cast<size_t>(S) * S, 0.0);
        const double log_z =
            forward_backward(c, ws, dE, nullptr, unit ? dT : ws.edge_scratch.data());
        for (int64_t i = 0; i < c.n * S; ++i) dE[i] = w * (dE[i] - p_allowed[i]);
        if (unit)
          for (int i = 0; i < S * S; ++i) dT[i] -= ws.partial_edge[i];
        else
          for (int i = 0; i < S * S; ++i) dT[i] += w * (ws.edge_scratch[i] - ws.partial_edge[i]);
        return w * (log_z - log_z_allowed);
      });
}

double alternatives_objective(const Corpus& corpus, const Layout& layout,
                              const double* theta, double* grad, int n_threads,
                              const AlternativeLabelings& alternatives) {
  double loss = evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        return listed_labelings_loss(c, ws, corpus.weight(s),
                                     &alternatives.labels[alternatives.first[s]],
                                     alternatives.count[s], dE, dT);
      });
  // evaluate_chunked skips empty sequences; each of their K alternatives is
  // the empty labeling, of probability 1.
  for (int64_t s = 0; s < corpus.n_sequences; ++s)
    if (corpus.offsets[s + 1] == corpus.offsets[s] && alternatives.count[s] > 1)
      loss -= corpus.weight(s) * std::log(static_cast<double>(alternatives.count[s]));
  return loss;
}

void decode_viterbi(const Corpus& corpus, const Layout& layout, const double* theta,
                    int n_threads, int32_t* labels, double* scores) {
  for_each_sequence(corpus, layout, theta, n_threads, true,
                    [&](int64_t s, const Chain& c, Workspace& ws) {
                      scores[s] = viterbi(c, ws, labels + corpus.offsets[s]);
                    });
}

void decode_marginals(const Corpus& corpus, const Layout& layout, const double* theta,
                      int n_threads, double* node, double* log_z) {
  const int S = layout.S;
  for_each_sequence(corpus, layout, theta, n_threads, true,
                    [&](int64_t s, const Chain& c, Workspace& ws) {
                      log_z[s] = forward_backward(c, ws, node + corpus.offsets[s] * S,
                                                  nullptr, nullptr);
                    });
}

void sequence_log_probabilities(const Corpus& corpus, const Layout& layout,
                                const double* theta, int n_threads, double* out) {
  std::fill(out, out + corpus.n_sequences, 0.0);  // empty sequences: log 1
  for_each_sequence(corpus, layout, theta, n_threads, false,
                    [&](int64_t s, const Chain& c, Workspace& ws) {
                      const int32_t* y = &corpus.labels[corpus.offsets[s]];
                      // log p <= 0; for a near-certain labeling, the rounding of two
                      // sums of n terms can put its score a few ulps above log Z
                      out[s] = std::min(0.0, labeling_score(c, y) - log_partition(c, ws));
                    });
}

}  // namespace sscrf
