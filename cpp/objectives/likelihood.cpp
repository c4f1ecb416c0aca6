// The likelihood of listed labelings: the complete labeling of each
// sequence, or a list of alternatives per sequence.
#include "objectives/likelihood.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <string>

#include "lattice/forward_backward.hpp"
#include "objectives/chunked.hpp"

namespace sscrf {

namespace {

// One thread's buffers for listed_labelings_loss.
struct alignas(64) ListedScratch {
  Scratch q;     // [K] q_k of a sequence's labelings
  Scratch edge;  // [S][S] edge marginal sums, before the weight
};

// One sequence's −w log Σ_k p(y_k | x) over its K listed labelings
// y [K][n] (K = 1: the likelihood, −w log p(y | x)), and its gradient:
// dE = w (p_t(b) − Σ_k q_k [y_k,t = b]), written over the emissions, and
// likewise with edge marginals and transition counts added into dT, where
// q_k = p(y_k | x) / Σ_j p(y_j | x) = softmax_k score(y_k), since Z(x)
// cancels (Tsuboi et al. 2008, eq. 4, with the allowed set listed).
double listed_labelings_loss(const Chain& c, Workspace& ws, ListedScratch& own, double w,
                             const int32_t* y, int64_t K, double* dE, double* dT) {
  const int S = c.S;
  // q_k from the labelings' scores, read before dE overwrites E
  Scratch& q = own.q;
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
    own.edge.assign(static_cast<size_t>(S) * S, 0.0);
    log_z = forward_backward(c, ws, dE, nullptr, own.edge.data());
    for (int i = 0; i < S * S; ++i) dT[i] += w * own.edge[i];
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

AlternativeLabelings::AlternativeLabelings(const Corpus& corpus, const int64_t* y,
                                           int64_t n_y, const int64_t* g, int64_t n_groups)
    : n_tokens(corpus.n_tokens),
      n_sequences(corpus.n_sequences),
      count(static_cast<size_t>(corpus.n_sequences), 0),
      first(static_cast<size_t>(corpus.n_sequences), 0) {
  int64_t n_labels = 0;
  for (int64_t k = 0; k < n_groups; ++k) {
    const int64_t prev = k ? g[k - 1] : -1;
    if (k == 0 ? g[k] != 0 : g[k] != prev && g[k] != prev + 1)
      throw InputError("groups must run 0, 1, 2, ... without gaps (non-decreasing, every "
                       "sequence present), got " + std::to_string(g[k]) + " after " +
                       std::to_string(prev));
    if (g[k] >= corpus.n_sequences)
      throw InputError("groups names sequence " + std::to_string(g[k]) + " but the corpus has " +
                       std::to_string(corpus.n_sequences));
    if (g[k] != prev) first[g[k]] = n_labels;
    ++count[g[k]];
    n_labels += corpus.offsets[g[k] + 1] - corpus.offsets[g[k]];
  }
  if (corpus.n_sequences > 0 && (n_groups == 0 || g[n_groups - 1] != corpus.n_sequences - 1))
    throw InputError("groups must give every one of the corpus's " +
                     std::to_string(corpus.n_sequences) + " sequences at least one alternative");
  if (n_y != n_labels)
    throw InputError("labels must hold " + std::to_string(n_labels) + " label ids (each "
                     "alternative as long as its sequence), got " + std::to_string(n_y));
  for (int64_t i = 0; i < n_labels; ++i) {
    if (y[i] < 0 || y[i] > INT32_MAX)
      throw InputError("label id " + std::to_string(y[i]) + " out of range");
    largest_label = std::max(largest_label, static_cast<int32_t>(y[i]));
  }
  labels.assign(y, y + n_labels);
}

double likelihood_objective(const Corpus& corpus, const Layout& layout, const double* theta,
                            double* grad, int n_threads) {
  PerThread<ListedScratch> scratch(n_threads);
  return evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        return listed_labelings_loss(c, ws, scratch.mine(), corpus.weight(s),
                                     &corpus.labels[corpus.offsets[s]], 1, dE, dT);
      });
}

double alternatives_objective(const Corpus& corpus, const Layout& layout,
                              const double* theta, double* grad, int n_threads,
                              const AlternativeLabelings& alternatives) {
  if (alternatives.n_tokens != corpus.n_tokens || alternatives.n_sequences != corpus.n_sequences)
    throw InputError("these alternatives were built for another corpus");
  if (alternatives.largest_label >= layout.S)
    throw InputError("label id " + std::to_string(alternatives.largest_label) +
                     " out of range for " + std::to_string(layout.S) + " labels");
  PerThread<ListedScratch> scratch(n_threads);
  double loss = evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        return listed_labelings_loss(c, ws, scratch.mine(), corpus.weight(s),
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

}  // namespace sscrf
