// Corpus-wide decoders: Viterbi labels, node marginals, labeling
// probabilities and entropies of every sequence, scored by the linear layer.
#pragma once

#include <cstdint>

#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"

namespace sscrf {

// Viterbi labels [n_tokens] and best scores [n_sequences] (masks honoured;
// an empty sequence scores 0). Throws NoLabeling when the masks leave some
// sentence no labeling.
void decode_viterbi(const Corpus& corpus, const Layout& layout, const double* theta,
                    int n_threads, int32_t* labels, double* scores);

// Node marginals [n_tokens][S] and log Z [n_sequences] (masks honoured; an
// empty sequence has log Z = 0). Throws NoLabeling as decode_viterbi.
void decode_marginals(const Corpus& corpus, const Layout& layout, const double* theta,
                      int n_threads, double* node, double* log_z);

// log p(y | x) [n_sequences] of the corpus labels (no masks).
void sequence_log_probabilities(const Corpus& corpus, const Layout& layout,
                                const double* theta, int n_threads, double* out);

// Emissions E = X·W [n_tokens][S] of every token, for decoders that run in
// Python on whole rows (N-best).
void score_emissions(const Corpus& corpus, const Layout& layout, const double* theta,
                     int n_threads, double* out);

// Sequence entropies [n_sequences], token entropies H(Y_t) [n_tokens] and
// transition entropies H(Y_t | Y_{t-1}) [n_tokens] (0 at each first token).
void decode_entropy(const Corpus& corpus, const Layout& layout, const double* theta,
                    int n_threads, double* sequence_entropy, double* token_entropy,
                    double* transition_entropy);

}  // namespace sscrf
