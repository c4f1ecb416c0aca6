// The likelihood of listed labelings: one per sequence (the supervised
// likelihood) or several (explicit alternatives).
#pragma once

#include <cstdint>
#include <vector>

#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"

namespace sscrf {

// Supervised negative log-likelihood Σ_seq w_seq (log Z - score(y)); returns
// it and writes its gradient into grad.
double likelihood_objective(const Corpus& corpus, const Layout& layout, const double* theta,
                            double* grad, int n_threads);

// Explicit alternative labelings of each sequence of a corpus:
// labels[first[s] + k·n_s + t] is label t of alternative k of sequence s
// (k < count[s], n_s its length), the sequences' alternatives one after
// another. Built once per term.
struct AlternativeLabelings {
  int64_t n_tokens = 0, n_sequences = 0;
  std::vector<int64_t> count;    // [n_sequences], each >= 1
  std::vector<int64_t> first;    // [n_sequences]
  std::vector<int32_t> labels;   // [Σ_s count[s] · n_s]
  int32_t largest_label = -1;    // checked against a layout's labels at each call
  // groups [n_groups]: the sequence of each alternative, 0, 1, 2, ...
  // without gaps (every sequence present); labels [n_labels]: the
  // alternatives' labels one after another, each as long as its sequence.
  // Throws InputError when they do not fit the corpus.
  AlternativeLabelings(const Corpus& corpus, const int64_t* labels, int64_t n_labels,
                       const int64_t* groups, int64_t n_groups);
};

// −Σ_x w_x log Σ_k p(y_k | x) over the alternatives y_k of each sequence x
// (a list: a labeling given twice counts twice). One forward-backward per
// sequence: the gradient is w_x (E_p[F] − Σ_k q_k F(y_k)) with
// q_k = p(y_k | x) / Σ_j p(y_j | x) = softmax_k score(y_k), since Z(x)
// cancels (Tsuboi et al. 2008, eq. 4, with the allowed set listed).
// Throws InputError when the alternatives belong to another corpus or name
// a label the layout lacks.
double alternatives_objective(const Corpus& corpus, const Layout& layout,
                              const double* theta, double* grad, int n_threads,
                              const AlternativeLabelings& alternatives);

}  // namespace sscrf
