// The likelihood objectives (complete, partial and listed alternative
// labelings) and the corpus decoders.
#include <algorithm>
#include <cmath>
#include <limits>

#include "objective.hpp"

namespace sscrf {

namespace {

// Forward-backward writing w·p_t(b) into node [n][S] (which may alias the
// emissions) and adding w·Σ_t of the edge marginals into edge_sum [S][S];
// returns log Z.
double weighted_marginals(const Chain& c, Workspace& ws, double w, double* node,
                          double* edge_sum) {
  if (w == 1.0) return forward_backward(c, ws, node, nullptr, edge_sum);
  const int S = c.S;
  ws.edge_scratch.assign(static_cast<size_t>(S) * S, 0.0);
  const double log_z = forward_backward(c, ws, node, nullptr, ws.edge_scratch.data());
  for (int i = 0; i < S * S; ++i) edge_sum[i] += w * ws.edge_scratch[i];
  for (int64_t i = 0; i < c.n * S; ++i) node[i] *= w;
  return log_z;
}

}  // namespace

double likelihood_objective(const Corpus& corpus, const Layout& layout, const double* theta,
                            double* grad, int n_threads) {
  const int S = layout.S;
  return evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        // ∂(log Z - score(y))/∂E[t,b] = p_t(b) - [y_t = b]; likewise for T
        // with edge marginals and transition counts.
        const int32_t* y = &corpus.labels[corpus.offsets[s]];
        const double w = corpus.weight(s);
        const double score = labeling_score(c, y);  // before dE overwrites E
        const double log_z = weighted_marginals(c, ws, w, dE, dT);
        for (int64_t t = 0; t < c.n; ++t) {
          dE[t * S + y[t]] -= w;
          if (t > 0) dT[y[t - 1] * S + y[t]] -= w;
        }
        return w * (log_z - score);
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
  const int S = layout.S;
  double loss = evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        const int64_t K = alternatives.count[s];
        const int32_t* y = &alternatives.labels[alternatives.first[s]];
        const double w = corpus.weight(s);
        // q_k from the labelings' scores, read before dE overwrites E.
        Scratch& q = ws.alternative_weights;
        q.resize(static_cast<size_t>(K));
        double top = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < K; ++k) {
          q[k] = labeling_score(c, y + k * c.n);
          top = std::max(top, q[k]);
        }
        double total = 0.0;
        for (int64_t k = 0; k < K; ++k) total += (q[k] = std::exp(q[k] - top));
        const double log_sum = top + std::log(total);  // log Σ_k exp score(y_k)
        const double log_z = weighted_marginals(c, ws, w, dE, dT);
        // ∂/∂E[t,b] = w (p_t(b) − Σ_k q_k [y_k,t = b]); likewise for T.
        for (int64_t k = 0; k < K; ++k) {
          const int32_t* yk = y + k * c.n;
          const double wq = w * (q[k] / total);
          for (int64_t t = 0; t < c.n; ++t) {
            dE[t * S + yk[t]] -= wq;
            if (t > 0) dT[yk[t - 1] * S + yk[t]] -= wq;
          }
        }
        return w * (log_z - log_sum);
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
                      out[s] = labeling_score(c, y) - log_partition(c, ws);
                    });
}

}  // namespace sscrf
